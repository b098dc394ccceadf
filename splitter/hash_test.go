package splitter

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// The values in this file were computed once, with the reference xxHash
// implementation, and must never change: changing them reshuffles every
// running experiment.

func TestXXH64Vectors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		seed uint64
		want uint64
	}{
		{"", 0, 0xef46db3751d8e999},
		{"a", 0, 0xd24ec4f1a98c6e5b},
		{"abc", 0, 0x44bc2cf5ad770999},
		{"abcd", 0, 0xde0327b0d25d92cc},                          // one 4-byte lane
		{"abcdefgh", 0, 0x3ad351775b4634b7},                      // one 8-byte lane
		{"abcdefghijklm", 0, 0x934adbc0ebc51325},                 // 8 + 4 + 1
		{strings.Repeat("0123456789", 4), 0, 0xca6fc80cbde1a931}, // one stripe + 8
		{strings.Repeat("0123456789", 10), 0, 0xf80e7b96315afffa},
		{"", 1, 0xd5afba1336a3be4b},
		{"user-42", 0x9e3779b97f4a7c15, 0x7222a2b7fa1a9612},
	} {
		if got := xxh64([]byte(tc.in), tc.seed); got != tc.want {
			t.Errorf("xxh64(%q, %#x) = %#016x, want %#016x", tc.in, tc.seed, got, tc.want)
		}
	}
}

var longKey = strings.Repeat("k", 100)

// goldenBuckets pins layer bucket = XXH64(key, XXH64(salt, 0)) mod 10000.
var goldenBuckets = []struct {
	salt, key string
	bucket    int
}{
	{"", "", 636},
	{"", "user-1", 1954},
	{"", "user-2", 3583},
	{"", "user-42", 6895},
	{"", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 8736},
	{"", longKey, 6170},
	{"", "\x00\xff\x10", 2281},
	{"homepage", "", 1086},
	{"homepage", "user-1", 2878},
	{"homepage", "user-2", 2505},
	{"homepage", "user-42", 3586},
	{"homepage", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 2100},
	{"homepage", longKey, 5854},
	{"homepage", "\x00\xff\x10", 7029},
	{"checkout", "", 6748},
	{"checkout", "user-1", 125},
	{"checkout", "user-2", 4753},
	{"checkout", "user-42", 6397},
	{"checkout", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 8094},
	{"checkout", longKey, 7781},
	{"checkout", "\x00\xff\x10", 2064},
	{"ünïcode-salt", "", 4900},
	{"ünïcode-salt", "user-1", 2300},
	{"ünïcode-salt", "user-2", 9062},
	{"ünïcode-salt", "user-42", 4477},
	{"ünïcode-salt", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 1477},
	{"ünïcode-salt", longKey, 1075},
	{"ünïcode-salt", "\x00\xff\x10", 8062},
}

// goldenVariantBuckets pins variant bucket =
// XXH64(key, XXH64(experiment, XXH64(salt, 0))) mod 10000.
var goldenVariantBuckets = []struct {
	salt, experiment, key string
	bucket                int
}{
	{"homepage", "new-ranker", "user-1", 5241},
	{"homepage", "new-ranker", "user-42", 7149},
	{"homepage", "new-ranker", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 1141},
	{"homepage", "blue-button", "user-1", 7118},
	{"homepage", "blue-button", "user-42", 9135},
	{"homepage", "blue-button", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 9772},
	{"checkout", "new-ranker", "user-1", 6620},
	{"checkout", "new-ranker", "user-42", 2340},
	{"checkout", "new-ranker", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 2130},
	{"checkout", "blue-button", "user-1", 6600},
	{"checkout", "blue-button", "user-42", 5045},
	{"checkout", "blue-button", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13", 921},
}

func TestGoldenBuckets(t *testing.T) {
	for _, g := range goldenBuckets {
		if got := bucketOf([]byte(g.key), layerSeed(g.salt)); got != g.bucket {
			t.Errorf("bucket(salt %q, key %q) = %d, want %d", g.salt, g.key, got, g.bucket)
		}
		if g.salt == "" {
			continue // a layer's salt defaults to its name, never empty
		}
		// Through the public API: a layer with one experiment covering
		// everything reports the bucket.
		s := mustNew(t, []Layer{{Name: "l", Salt: g.salt, Experiments: []Experiment{
			{Name: "e", Allocation: 100, Variants: []Variant{{Name: "v", Weight: 1, Topic: "t"}}},
		}}})
		as := s.Assign([]byte(g.key), nil)
		if len(as) != 1 || as[0].Bucket != float64(g.bucket) {
			t.Errorf("Assign(salt %q, key %q) = %+v, want bucket %d", g.salt, g.key, as, g.bucket)
		}
	}
}

func TestGoldenVariantBuckets(t *testing.T) {
	for _, g := range goldenVariantBuckets {
		seed := experimentSeed(layerSeed(g.salt), g.experiment)
		if got := bucketOf([]byte(g.key), seed); got != g.bucket {
			t.Errorf("variant bucket(salt %q, experiment %q, key %q) = %d, want %d",
				g.salt, g.experiment, g.key, got, g.bucket)
		}
		// Through the public API: with 100 variants of weight 1, variant
		// i owns variant buckets [100i, 100i+100).
		vs := make([]Variant, 100)
		for i := range vs {
			vs[i] = Variant{Name: "v" + itoa(i), Weight: 1, Topic: "t"}
		}
		s := mustNew(t, []Layer{{Name: "l", Salt: g.salt, Experiments: []Experiment{
			{Name: g.experiment, Allocation: 100, Variants: vs},
		}}})
		as := s.Assign([]byte(g.key), nil)
		if want := "v" + itoa(g.bucket/100); len(as) != 1 || as[0].Variant != want {
			t.Errorf("Assign(salt %q, experiment %q, key %q) = %+v, want variant %s",
				g.salt, g.experiment, g.key, as, want)
		}
	}
}

// cespareXXH64 is XXH64 through github.com/cespare/xxhash/v2, the reference
// implementation this package's own is checked against.
func cespareXXH64(b []byte, seed uint64) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(seed)
	d.Write(b)
	return d.Sum64()
}

// FuzzXXH64MatchesCespare is the differential test of xxh64 against
// cespare/xxhash: every length class (lanes of 1, 4, 8 and 32 bytes) with
// any seed. The seed corpus holds the golden vectors' inputs.
func FuzzXXH64MatchesCespare(f *testing.F) {
	f.Add([]byte(""), uint64(0))
	f.Add([]byte("abcdefghijklm"), uint64(1))
	f.Add([]byte(strings.Repeat("0123456789", 10)), uint64(0x9e3779b97f4a7c15))
	f.Add([]byte(longKey), uint64(1<<63))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		if got, want := xxh64(b, seed), cespareXXH64(b, seed); got != want {
			t.Fatalf("xxh64(%q, %#x) = %#016x, cespare/xxhash gives %#016x", b, seed, got, want)
		}
	})
}

// TestXXH64VectorsThroughCespare runs the golden vectors through
// cespare/xxhash too, so that a wrong vector cannot hide behind a matching
// bug in xxh64.
func TestXXH64VectorsThroughCespare(t *testing.T) {
	for _, g := range goldenBuckets {
		if got, want := int(cespareXXH64([]byte(g.key), cespareXXH64([]byte(g.salt), 0))%Buckets), g.bucket; got != want {
			t.Errorf("cespare: bucket(salt %q, key %q) = %d, want %d", g.salt, g.key, got, want)
		}
	}
}

// BenchmarkXXH64 compares this package's one-shot XXH64 with the seeded
// Digest of cespare/xxhash (the reason hash.go keeps its own).
func BenchmarkXXH64(b *testing.B) {
	for _, k := range []string{"user-000000007919", "7f3c9a10-5b2e-4d8e-9c61-2a9b0f4e7d13"} {
		key := []byte(k)
		var sink uint64
		b.Run("splitter/len="+itoa(len(k)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink += xxh64(key, 0x9e3779b97f4a7c15)
			}
		})
		b.Run("cespare/len="+itoa(len(k)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink += cespareXXH64(key, 0x9e3779b97f4a7c15)
			}
		})
		if sink == 1 {
			b.Log(sink)
		}
	}
}
