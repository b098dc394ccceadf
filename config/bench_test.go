package config

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// scaleBudgets returns n budgets shaped as shape: "tree" (an account
// period budget above every nine window budgets), "chain" (each the
// parent of the next) or "delay" (delay budgets, none a parent).
func scaleBudgets(n int, shape string) []Budget {
	begin := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	bs := make([]Budget, n)
	for i := range bs {
		b := Budget{Name: fmt.Sprintf("campaign/%06d", i), Target: 1000, Begin: begin, End: begin.Add(2 * time.Hour)}
		switch {
		case shape == "delay":
			b = Budget{Name: b.Name, Target: 10, Period: time.Minute, Action: ActionDelay}
		case shape == "chain" && i > 0:
			b.Parent = bs[i-1].Name
		case shape == "tree" && i%10 == 0:
			b = Budget{Name: b.Name, Target: 100_000, Period: time.Hour}
		case shape == "tree":
			b.Parent = bs[i/10*10].Name
		}
		bs[i] = b
	}
	return bs
}

// BenchmarkValidateBudgets validates configs of 1k, 10k and 100k budgets
// of each shape; ns/budget stays flat as the count grows when validation
// is O(budgets).
func BenchmarkValidateBudgets(b *testing.B) {
	for _, shape := range []string{"tree", "chain", "delay"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("shape=%s/budgets=%d", shape, n), func(b *testing.B) {
				c := &Config{Brokers: []string{"127.0.0.1:9092"}, Topics: Topics{Input: []string{"in"}, Output: "out"},
					Fields: Fields{Budget: "campaign"}, Budgets: scaleBudgets(n, shape)}
				c.ApplyDefaults()
				for b.Loop() {
					if err := c.Validate(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/budget")
			})
		}
	}
}

// BenchmarkReadBudgets reads a budgets file of 100k lines against the
// same budgets in YAML (Parse), per budget.
func BenchmarkReadBudgets(b *testing.B) {
	const n = 100_000
	bs := scaleBudgets(n, "tree")
	var jl, yaml bytes.Buffer
	yaml.WriteString(minimal)
	for _, x := range bs {
		line := `{"name":"` + x.Name + `","target":` + strconv.FormatFloat(x.Target, 'g', -1, 64)
		y := "  - name: " + x.Name + "\n    target: " + strconv.FormatFloat(x.Target, 'g', -1, 64) + "\n"
		if x.Period > 0 {
			line += `,"period":"` + x.Period.String() + `"`
			y += "    period: " + x.Period.String() + "\n"
		} else {
			line += `,"begin":"` + x.Begin.Format(time.RFC3339) + `","end":"` + x.End.Format(time.RFC3339) + `","parent":"` + x.Parent + `"`
			y += "    begin: " + x.Begin.Format(time.RFC3339) + "\n    end: " + x.End.Format(time.RFC3339) + "\n    parent: " + x.Parent + "\n"
		}
		jl.WriteString(line + "}\n")
		yaml.WriteString(y)
	}
	b.Run("format=jsonl", func(b *testing.B) {
		for b.Loop() {
			if got, _, ps := ReadBudgets(bytes.NewReader(jl.Bytes()), "b.jsonl"); len(ps) > 0 || len(got) != n {
				b.Fatal(ps)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/budget")
	})
	b.Run("format=yaml", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(yaml.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/budget")
	})
}
