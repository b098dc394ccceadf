package flow

import (
	"math/rand/v2"
	"testing"
)

// TestCapDivisor checks the division by multiplication against the
// hardware division, for divisors of every bit length (powers of two and
// their neighbours among them) and dividends up to the largest tolerance,
// 2^62, where an error would show: multiples of the divisor and their
// neighbours, and random ones.
func TestCapDivisor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint64{1, 2, 3, 5, 7, 1e9, 1e9 + 7, 1<<62 - 1, 1 << 62}
	for l := range 63 {
		p := uint64(1) << l
		divisors = append(divisors, p, p+1, p-1|1, p|rng.Uint64N(p)|1)
	}
	for _, d := range divisors {
		div := newCapDivisor(d)
		check := func(n uint64) {
			if n > maxTolerance {
				return
			}
			if got, want := div.quo(int64(n)), n/d; uint64(got) != want {
				t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
			}
		}
		for _, n := range []uint64{0, 1, d - 1, d, d + 1, maxTolerance, maxTolerance - 1} {
			check(n)
		}
		for range 2000 {
			q := rng.Uint64N(maxTolerance/d + 1)
			check(q*d - 1)
			check(q * d)
			check(q*d + d - 1)
			check(rng.Uint64N(maxTolerance+1) >> rng.UintN(63))
		}
	}
}
