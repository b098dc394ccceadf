package splitter_test

import (
	"errors"
	"fmt"

	"github.com/throttler/throttler/splitter"
)

func Example() {
	s, err := splitter.New([]splitter.Layer{
		{Name: "ranking", Experiments: []splitter.Experiment{
			{Name: "new-ranker", Allocation: 40, Variants: []splitter.Variant{
				{Name: "control", Weight: 50, Topic: "ranker-control"},
				{Name: "treatment", Weight: 50, Topic: "ranker-treatment"},
			}},
		}},
		{Name: "ui", Experiments: []splitter.Experiment{
			{Name: "blue-button", Start: 50, Allocation: 50, Variants: []splitter.Variant{
				{Name: "control", Weight: 1, Topic: "button-control"},
				{Name: "blue", Weight: 1, Topic: "button-blue"},
			}},
		}},
	})
	if err != nil {
		panic(err)
	}
	dst := make([]splitter.Assignment, 0, 2) // one per layer: Assign never allocates
	for i := 1; i <= 8; i++ {
		key := fmt.Sprintf("user-%d", i)
		dst = s.Assign([]byte(key), dst[:0])
		topic, ok := splitter.Route(dst)
		if !ok {
			topic = "output"
		}
		fmt.Printf("%s -> %s", key, topic)
		for _, a := range dst {
			fmt.Printf(" [%s/%s/%s bucket %v]", a.Layer, a.Experiment, a.Variant, a.Bucket)
		}
		fmt.Println()
	}
	// Output:
	// user-1 -> ranker-treatment [ranking/new-ranker/treatment bucket 2946]
	// user-2 -> output
	// user-3 -> output
	// user-4 -> ranker-treatment [ranking/new-ranker/treatment bucket 2602] [ui/blue-button/blue bucket 8067]
	// user-5 -> output
	// user-6 -> button-control [ui/blue-button/control bucket 5582]
	// user-7 -> output
	// user-8 -> button-blue [ui/blue-button/blue bucket 9728]
}

func ExampleNew_invalid() {
	_, err := splitter.New([]splitter.Layer{
		{Name: "ranking", Experiments: []splitter.Experiment{
			{Name: "a", Allocation: 60, Variants: []splitter.Variant{{Name: "x", Weight: 1, Topic: "a-x"}}},
			{Name: "b", Start: 50, Allocation: 30, Variants: []splitter.Variant{{Name: "y", Weight: 0}}},
		}},
	})
	var ps splitter.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Println(p)
		}
	}
	// Output:
	// layers[0].experiments[1].variants[0].weight: must be positive and finite, got 0
	// layers[0].experiments[1].variants[0].topic: must not be empty
	// layers[0].experiments[1]: range [50%, 80%) overlaps experiments[0] "a" range [0%, 60%); experiments of a layer must own disjoint ranges (set start)
}

func ExampleSRM() {
	// Keys counted per variant of a 50/50 experiment.
	chi2, p := splitter.SRM([]uint64{50_600, 49_400}, []float64{50, 50})
	fmt.Printf("chi2 %.1f, p %.5f, mismatch: %v\n", chi2, p, p < 0.001)
	// Output:
	// chi2 14.4, p 0.00015, mismatch: true
}
