package splitter

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/twmb/murmur3"
)

// Unleash's variants and gradual rollout, from its client specification
// (the test suite of every Unleash SDK) and its Go and Node SDKs:
//
//	normalized(group, key, seed, n) = MurmurHash3_x86_32(group + ":" + key, seed) mod n + 1
//	rollout:  in when rollout > 0 and normalized(rolloutGroupId, key, 0, 100) <= rollout
//	variant:  t = normalized(groupId, key, 86028157, total weight); the first
//	          variant whose cumulative weight is at least t
//
// Values count from 1; total is the sum of the weights. The Go, Java,
// Python and Rust SDKs hash the UTF-8 bytes of the string; the Node SDK
// (murmurhash3js) the low byte of each UTF-16 code unit (EncodingUTF16).

// Seeds of Unleash's normalized hash.
const (
	unleashRolloutSeed = 0
	unleashVariantSeed = 86028157
)

// unleashNormalized is normalized(group, key, seed, n), 1 to n.
func unleashNormalized(group, key []byte, u16 bool, seed, n uint32) uint32 {
	var buf [scratch]byte
	b := buf[:0]
	if u16 {
		b = appendLowBytes(append(appendLowBytes(b, group), ':'), key)
	} else {
		b = append(append(append(b, group...), ':'), key...)
	}
	return murmur3.SeedSum32(seed, b)%n + 1
}

// appendLowBytes appends the low byte of each UTF-16 code unit of the
// UTF-8 text s (U+FFFD for each invalid byte), as murmurhash3js reads a
// JavaScript string.
func appendLowBytes(dst, s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		s = s[n:]
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			dst = append(dst, byte(hi), byte(lo))
			continue
		}
		dst = append(dst, byte(r))
	}
	return dst
}
