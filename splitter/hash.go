package splitter

import (
	"encoding/binary"
	"math/bits"
)

// This file implements XXH64 as specified in the xxHash specification
// (doc/xxhash_spec.md of the xxHash project, section "XXH64 algorithm
// description"), written from that description. The splitter's bucketing is
// defined on top of it (see the package documentation), so any XXH64
// implementation that accepts a seed can reproduce a bucket outside Go.
//
// Why not github.com/cespare/xxhash/v2, which the module graph already
// holds (through Prometheus)? Its only seeded entry point (v2.3.0) is the
// streaming Digest: ResetWithSeed, Write, Sum64. The splitter hashes short
// keys (a user id, a UUID) twice per layer for every event, and through the
// Digest that costs three to four times as much as this one-shot function
// on a 17-byte key and about 1.6 times on a 36-byte UUID
// (BenchmarkXXH64 in hash_test.go measures both side by side). The two
// must never disagree: FuzzXXH64MatchesCespare checks this implementation
// against cespare/xxhash for any input and seed, and the golden vectors pin
// both.

const (
	prime64v1 uint64 = 0x9E3779B185EBCA87
	prime64v2 uint64 = 0xC2B2AE3D27D4EB4F
	prime64v3 uint64 = 0x165667B19E3779F9
	prime64v4 uint64 = 0x85EBCA77C2B2AE63
	prime64v5 uint64 = 0x27D4EB2F165667C5
)

// xxh64Round mixes one 8-byte lane into an accumulator.
func xxh64Round(acc, lane uint64) uint64 {
	acc += lane * prime64v2
	acc = bits.RotateLeft64(acc, 31)
	return acc * prime64v1
}

// xxh64Merge folds one of the four stripe accumulators into acc.
func xxh64Merge(acc, v uint64) uint64 {
	acc ^= xxh64Round(0, v)
	return acc*prime64v1 + prime64v4
}

// xxh64 returns the XXH64 hash of b with the given seed.
func xxh64(b []byte, seed uint64) uint64 {
	n := uint64(len(b))
	var acc uint64
	if len(b) >= 32 {
		v1 := seed + prime64v1 + prime64v2
		v2 := seed + prime64v2
		v3 := seed
		v4 := seed - prime64v1
		for len(b) >= 32 {
			v1 = xxh64Round(v1, binary.LittleEndian.Uint64(b[0:8]))
			v2 = xxh64Round(v2, binary.LittleEndian.Uint64(b[8:16]))
			v3 = xxh64Round(v3, binary.LittleEndian.Uint64(b[16:24]))
			v4 = xxh64Round(v4, binary.LittleEndian.Uint64(b[24:32]))
			b = b[32:]
		}
		acc = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) +
			bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		acc = xxh64Merge(acc, v1)
		acc = xxh64Merge(acc, v2)
		acc = xxh64Merge(acc, v3)
		acc = xxh64Merge(acc, v4)
	} else {
		acc = seed + prime64v5
	}
	acc += n
	for len(b) >= 8 {
		acc ^= xxh64Round(0, binary.LittleEndian.Uint64(b[:8]))
		acc = bits.RotateLeft64(acc, 27)*prime64v1 + prime64v4
		b = b[8:]
	}
	if len(b) >= 4 {
		acc ^= uint64(binary.LittleEndian.Uint32(b[:4])) * prime64v1
		acc = bits.RotateLeft64(acc, 23)*prime64v2 + prime64v3
		b = b[4:]
	}
	for _, c := range b {
		acc ^= uint64(c) * prime64v5
		acc = bits.RotateLeft64(acc, 11) * prime64v1
	}
	acc ^= acc >> 33
	acc *= prime64v2
	acc ^= acc >> 29
	acc *= prime64v3
	acc ^= acc >> 32
	return acc
}

// xxh64String is xxh64 over the bytes of s; used at New time only.
func xxh64String(s string, seed uint64) uint64 {
	return xxh64([]byte(s), seed)
}

// layerSeed is the seed of a layer's bucketing hash: XXH64(salt, 0).
func layerSeed(salt string) uint64 { return xxh64String(salt, 0) }

// experimentSeed is the seed of an experiment's variant hash:
// XXH64(experiment name, layerSeed(salt)).
func experimentSeed(layer uint64, experiment string) uint64 {
	return xxh64String(experiment, layer)
}

// bucketOf maps a key to one of the Buckets buckets under a seed:
// XXH64(key, seed) mod Buckets.
func bucketOf(key []byte, seed uint64) int {
	return int(xxh64(key, seed) % Buckets)
}
