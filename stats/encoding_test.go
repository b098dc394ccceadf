package stats

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

var (
	t0 = time.Date(2026, 9, 18, 5, 43, 3, 123456789, time.UTC)
	t1 = t0.Add(-time.Hour)
)

func sampleReport() flow.Report {
	return flow.Report{
		Budget:   "campaign/spring",
		Source:   "events/3",
		At:       t0,
		Since:    t1,
		Total:    flow.Counters{Offered: 1000, Passed: 250, Rewards: 12.5},
		Period:   42,
		InPeriod: flow.Counters{Offered: 10, Passed: 3, Rewards: 0.25},
		Cut:      0.875,
	}
}

// sameReport compares reports field by field, times with Equal and rewards
// bit for bit (NaN round-trips).
func sameReport(a, b flow.Report) bool {
	sameC := func(x, y flow.Counters) bool {
		return x.Offered == y.Offered && x.Passed == y.Passed &&
			math.Float64bits(x.Rewards) == math.Float64bits(y.Rewards)
	}
	return a.Budget == b.Budget && a.Source == b.Source &&
		a.At.Equal(b.At) && a.Since.Equal(b.Since) &&
		sameC(a.Total, b.Total) && a.Period == b.Period && sameC(a.InPeriod, b.InPeriod) &&
		math.Float64bits(a.Cut) == math.Float64bits(b.Cut)
}

// decodeTime reads one time written by appendTime, as every record kind
// does, and fails on bytes left over.
func decodeTime(b []byte) (time.Time, error) {
	d := decoder{what: "value", b: b}
	at := d.time()
	d.end()
	return at, d.err
}

// TestTimeEncoding: every instant a writer makes round-trips exactly and
// comes back in UTC; an instant outside int64 nanoseconds since 1970, out
// of range nanoseconds and truncated bytes are corrupt.
func TestTimeEncoding(t *testing.T) {
	for i, at := range []time.Time{
		t0,
		{}, // the zero time
		time.Unix(0, 0),
		time.Unix(-62135596800, 0),
		t0.In(time.FixedZone("X", 3600)),
		time.Date(2262, 4, 11, 0, 0, 0, 999999999, time.UTC),
	} {
		b := appendTime(nil, at)
		got, err := decodeTime(b)
		if err != nil || !got.Equal(at) {
			t.Fatalf("case %d: %v decoded as %v (%v)", i, at, got, err)
		}
		if got.Location() != time.UTC {
			t.Fatalf("case %d: decoded time not in UTC", i)
		}
		for n := range len(b) {
			if _, err := decodeTime(b[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("case %d truncated to %d bytes: err = %v", i, n, err)
			}
		}
	}
	// The zero time comes back as the zero value itself.
	if got, _ := decodeTime(appendTime(nil, time.Time{})); got != (time.Time{}) {
		t.Fatalf("zero time decoded as %v", got)
	}
	// An instant outside int64 nanoseconds since 1970 is corrupt.
	for _, at := range []time.Time{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := decodeTime(appendTime(nil, at)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("an instant in %d: %v, want ErrCorrupt", at.Year(), err)
		}
	}
	// Nanoseconds of 1e9 or more are corrupt.
	if _, err := decodeTime([]byte{0, 0x80, 0x94, 0xeb, 0xdc, 0x03}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("1e9 ns: err = %v", err)
	}
}
