package splitter

import "github.com/twmb/murmur3"

// Optimizely's bucketer, from its SDKs (the JavaScript and Go bucketers
// and their tests):
//
//	bucket = floor(MurmurHash3_x86_32(key + experiment id, seed 1) / 2^32 * 10000)
//
// computed in float64, in [0, 10000). The experiment's traffic allocation
// is a list of (entity, end of range) in increasing order; the key goes to
// the first entity whose end of range is more than its bucket, and to none
// past the last. A leading range without an entity is Start here, and the
// variants' ranges follow one another with their weights as widths.
//
// MurmurHash3 is github.com/twmb/murmur3, the implementation Optimizely's
// and Unleash's own Go SDKs use. Every Optimizely SDK hashes UTF-8 (the
// JavaScript one through TextEncoder), so there is no JavaScript variant.

// optimizelySeed is the MurmurHash3 seed of Optimizely's bucketer.
const optimizelySeed = 1

// optimizelyBucket is the bucket, 0 to 9999, of a key in the experiment
// with the given id. buf is scratch space for the concatenation.
func optimizelyBucket(key, experimentID []byte) int {
	var buf [scratch]byte
	b := append(append(buf[:0], key...), experimentID...)
	h := murmur3.SeedSum32(optimizelySeed, b)
	return int(float64(h) / (1 << 32) * 10000)
}

// scratch is the size of the stack buffers keys are concatenated into
// with a seed; a longer concatenation is built on the heap.
const scratch = 256
