package flow_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// capBench holds a Cap with a million keys, built once and shared by the
// benchmark runs.
var capBench struct {
	once sync.Once
	keys [][]byte
	cap  *flow.Cap
	now  time.Time
	i    int
}

const (
	capBenchKeys = 1_000_000
	capBenchStep = time.Second / capBenchKeys // a round of all keys takes 1s
)

func capBenchKeyBytes() [][]byte {
	keys := make([][]byte, capBenchKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user-%07d", i)
	}
	return keys
}

func capBenchSetup(b *testing.B) {
	capBench.once.Do(func() {
		capBench.keys = capBenchKeyBytes()
		// One per second per key, no burst.
		capBench.cap = mustCap(b, 0, 1, time.Second)
		for _, k := range capBench.keys {
			capBench.cap.ThrottleBytes(k, capStart, 1)
		}
		// Every key's TAT is now capStart+1s: the next round starts there.
		capBench.now = capStart.Add(time.Second - capBenchStep)
	})
}

// BenchmarkGCRA throttles existing keys of a Cap that tracks a million keys,
// visiting them round-robin. In "allowed" each key comes back exactly one
// emission interval later and is admitted (its state is written), the
// instants given in Unix nanoseconds (ThrottleNanos), so that the loop costs
// what the map's loops cost beside the call; in "limited" the clock stands
// still and every call is refused (read only). "allowed-time" is "allowed"
// through ThrottleBytes and time.Time.
func BenchmarkGCRA(b *testing.B) {
	capBenchSetup(b)
	c, keys := capBench.cap, capBench.keys
	b.Run("allowed", func(b *testing.B) {
		b.ReportAllocs()
		i, now, refused := capBench.i, capBench.now.UnixNano(), 0
		for b.Loop() {
			now += int64(capBenchStep)
			if c.ThrottleNanos(keys[i], now, 1).Limited {
				refused++
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
		capBench.i, capBench.now = i, time.Unix(0, now)
		if refused > 0 {
			b.Fatalf("%d refused", refused)
		}
	})
	b.Run("allowed-time", func(b *testing.B) {
		// "allowed" through the time.Time API, the clock advanced with
		// time.Time.Add: the conversions cost what they cost on top.
		b.ReportAllocs()
		i, now, refused := capBench.i, capBench.now, 0
		for b.Loop() {
			now = now.Add(capBenchStep)
			if c.ThrottleBytes(keys[i], now, 1).Limited {
				refused++
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
		capBench.i, capBench.now = i, now
		if refused > 0 {
			b.Fatalf("%d refused", refused)
		}
	})
	// For scale on the machine at hand: plain Go map operations on the same
	// keys in the same orders, without any GCRA.
	b.Run("baseline-map-lookup", func(b *testing.B) { capBenchMapLookup(b, keys, nil) })
	b.Run("baseline-map-update", func(b *testing.B) { capBenchMapUpdate(b, keys, nil) })
	b.Run("baseline-map-random", func(b *testing.B) {
		capBenchMapLookup(b, keys, rand.New(rand.NewPCG(7, 8)).Perm(len(keys)))
	})
	b.Run("baseline-map-random-update", func(b *testing.B) {
		capBenchMapUpdate(b, keys, rand.New(rand.NewPCG(9, 10)).Perm(len(keys)))
	})
	b.Run("baseline-map-random-32B-keys", func(b *testing.B) {
		capBenchMapLookup(b, capBenchLongKeys(len(keys)), rand.New(rand.NewPCG(9, 10)).Perm(len(keys)))
	})
	b.Run("baseline-map-random-update-32B-keys", func(b *testing.B) {
		capBenchMapUpdate(b, capBenchLongKeys(len(keys)), rand.New(rand.NewPCG(9, 10)).Perm(len(keys)))
	})
	b.Run("random-order-allowed", func(b *testing.B) { capBenchRandomAllowed(b, keys) })
	b.Run("random-order-allowed-32B-keys", func(b *testing.B) {
		// The same with keys of 32 hex digits, such as UUIDs without dashes.
		capBenchRandomAllowed(b, capBenchLongKeys(len(keys)))
	})
	b.Run("random-order", func(b *testing.B) {
		// Keys in a random order, as real traffic would send them: nothing
		// the cap reads is in cache. The clock stands still (read only).
		order := rand.New(rand.NewPCG(7, 8)).Perm(len(keys))
		b.ReportAllocs()
		i, now := 0, capBench.now.UnixNano()
		for b.Loop() {
			c.ThrottleNanos(keys[order[i]], now, 1)
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
	b.Run("limited", func(b *testing.B) {
		b.ReportAllocs()
		i, now, allowed := 0, capBench.now.UnixNano(), 0
		for b.Loop() {
			if !c.ThrottleNanos(keys[i], now, 1).Limited {
				allowed++
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
		if allowed > 0 {
			b.Fatalf("%d allowed", allowed)
		}
	})
}

// capBenchRandomAllowed throttles keys in a random order, other than the
// order they were added in, each coming back one emission interval later and
// admitted (its state written), on a Cap of its own that tracks all the
// keys.
func capBenchRandomAllowed(b *testing.B, keys [][]byte) {
	c := mustCap(b, 0, 1, time.Second)
	for _, k := range keys {
		c.ThrottleBytes(k, capStart, 1)
	}
	// Every key's TAT is now capStart+1s; from then on each key comes back
	// exactly one second (a round of all keys) after its previous call.
	order := rand.New(rand.NewPCG(9, 10)).Perm(len(keys))
	now := capStart.Add(time.Second).UnixNano()
	b.ReportAllocs()
	i, refused := 0, 0
	for b.Loop() {
		if c.ThrottleNanos(keys[order[i]], now, 1).Limited {
			refused++
		}
		now += int64(capBenchStep)
		if i++; i == len(keys) {
			i = 0
		}
	}
	if refused > 0 {
		b.Fatalf("%d refused", refused)
	}
}

// capBenchLongKeys returns n distinct keys of 32 hex digits, such as UUIDs
// without dashes.
func capBenchLongKeys(n int) [][]byte {
	long := make([][]byte, n)
	for i := range long {
		long[i] = fmt.Appendf(nil, "%016x%016x", uint64(i)*0x9e3779b97f4a7c15, i)
	}
	return long
}

// capBenchMapLookup is the reference for the read-only runs ("limited",
// "random-order"): a lookup of each key, in the given order (round-robin
// when order is nil), in a plain Go map keyed by copies of the keys.
func capBenchMapLookup(b *testing.B, keys [][]byte, order []int) {
	m := make(map[string]int64, len(keys))
	for _, k := range keys {
		m[string(k)] = 1
	}
	b.ReportAllocs()
	i, sum := 0, int64(0)
	if order == nil { // the same loop as the Cap's round-robin runs
		for b.Loop() {
			sum += m[string(keys[i])]
			if i++; i == len(keys) {
				i = 0
			}
		}
	} else {
		for b.Loop() {
			sum += m[string(keys[order[i]])]
			if i++; i == len(keys) {
				i = 0
			}
		}
	}
	if sum == 0 {
		b.Fatal("no key found")
	}
}

// capBenchMapUpdate is the reference for the "allowed" runs, which read and
// write a key's state: GCRA on a plain Go map of TATs, reduced to its map
// operations, a lookup and a store of each key (in the given order, or
// round-robin when order is nil). The map is keyed by copies of the keys and
// looked up by other strings of the same bytes, so that every comparison
// reads the bytes of two keys, as a Cap compares the key it is given with
// the one it holds. Strings, because a store m[string(k)] = v copies the
// key every time (an allocation per call that would measure the allocator,
// not the map).
func capBenchMapUpdate(b *testing.B, keys [][]byte, order []int) {
	m := make(map[string]int64, len(keys))
	lookup := make([]string, len(keys))
	for i, k := range keys {
		m[string(k)] = 1
		lookup[i] = string(k)
	}
	b.ReportAllocs()
	i := 0
	if order == nil { // the same loop as the Cap's round-robin runs
		for b.Loop() {
			m[lookup[i]] = m[lookup[i]] + 1
			if i++; i == len(keys) {
				i = 0
			}
		}
	} else {
		for b.Loop() {
			k := lookup[order[i]]
			m[k] = m[k] + 1
			if i++; i == len(keys) {
				i = 0
			}
		}
	}
	if m[lookup[0]] == 1 && m[lookup[len(keys)-1]] == 1 {
		b.Fatal("no key updated")
	}
}

// BenchmarkCapMemory inserts a million distinct keys and reports the heap
// the cap holds per key beyond the key's own bytes (map slot, index, TAT,
// and the size-class rounding of the key's allocation).
func BenchmarkCapMemory(b *testing.B) {
	keys := capBenchKeyBytes()
	keyBytes := 0
	for _, k := range keys {
		keyBytes += len(k)
	}
	var perKey float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := mustCap(b, 2, 3, time.Hour)
		for _, k := range keys {
			c.ThrottleBytes(k, capStart, 1)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if c.Len() != len(keys) {
			b.Fatalf("Len = %d", c.Len())
		}
		runtime.KeepAlive(c)
		perKey = (float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(keyBytes)) / float64(len(keys))
	}
	b.ReportMetric(perKey, "B/key")
	b.ReportMetric(float64(keyBytes)/float64(len(keys)), "keylen")
}
