package initcfg

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestPlan(t *testing.T) {
	offs := func(m map[int32]int64) map[int32]kadm.ListedOffset {
		out := map[int32]kadm.ListedOffset{}
		for p, o := range m {
			out[p] = kadm.ListedOffset{Partition: p, Offset: o}
		}
		return out
	}
	for _, tc := range []struct {
		starts, ends map[int32]int64
		max, total   int
	}{
		{map[int32]int64{0: 0, 1: 0, 2: 0}, map[int32]int64{0: 1000, 1: 1000, 2: 1000}, 300, 300},
		{map[int32]int64{0: 0, 1: 0, 2: 0}, map[int32]int64{0: 10, 1: 1000, 2: 0}, 300, 300}, // a short and an empty partition
		{map[int32]int64{0: 5, 1: 0}, map[int32]int64{0: 10, 1: 3}, 300, 8},                  // fewer records than max
		{map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}, map[int32]int64{0: 9, 1: 9, 2: 9, 3: 9}, 2, 2},
	} {
		from, want := plan(offs(tc.starts), offs(tc.ends), tc.max)
		total := 0
		for p, n := range want {
			total += n
			if n <= 0 || from[p] != tc.ends[p]-int64(n) || from[p] < tc.starts[p] {
				t.Errorf("%v..%v: partition %d reads %d from %d", tc.starts, tc.ends, p, n, from[p])
			}
		}
		if total != tc.total || len(from) != len(want) {
			t.Errorf("%v..%v max %d: %d records planned, want %d", tc.starts, tc.ends, tc.max, total, tc.total)
		}
		if tc.max == 300 && tc.total == 300 && len(tc.ends) == 3 && tc.ends[0] == 1000 && (want[0] != 100 || want[1] != 100 || want[2] != 100) {
			t.Errorf("even partitions: %v", want)
		}
	}
}

func TestRoundSignificant(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{{3399999.7, 3400000}, {3.46e6, 3.5e6}, {0.7, 0.7}, {12, 12}, {987, 990}} {
		if got := roundSignificant(tc.x, 2); got != tc.want {
			t.Errorf("roundSignificant(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}
