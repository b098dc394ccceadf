package splitter

import (
	"crypto/sha256"
	"encoding/binary"
)

// Statsig's experiment assignment, from its server SDKs (statsig-server-
// core's evaluator and its tests, and the config specs they evaluate):
//
//	hash(salt, unit) = first 8 bytes, big endian, of SHA-256(salt + "." + unit)
//	user bucket      = hash(salt, unit) mod 1000
//
// An experiment's groups are rules "user bucket < threshold" on the
// experiment's salt, checked in order (thresholds 500, 1000 for 50/50); a
// layer allocates each experiment a set of the user buckets of the layer's
// salt ("layerAssignment"), all of them for an experiment alone. Statsig
// hashes UTF-8 in every SDK.

// statsigBuckets is the number of user buckets.
const statsigBuckets = 1000

// statsigBucket is the user bucket, 0 to 999, of key under salt.
func statsigBucket(salt, key []byte) int {
	var buf [scratch]byte
	return int(statsigHash(append(append(append(buf[:0], salt...), '.'), key...)) % statsigBuckets)
}

// statsigHash is Statsig's hash of a string: the first 8 bytes, big
// endian, of its SHA-256.
func statsigHash(b []byte) uint64 {
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// segmentSet is a set of Statsig user buckets, one bit each.
type segmentSet [(statsigBuckets + 63) / 64]uint64

func (s *segmentSet) add(b int)      { s[b>>6] |= 1 << (b & 63) }
func (s *segmentSet) has(b int) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *segmentSet) overlaps(o *segmentSet) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}
