package splitter

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// GrowthBook's assignment, from the SDKs' specification (the cases.json
// test suite every GrowthBook SDK runs) and its JavaScript and Go SDKs:
//
//	fnv(s)             = FNV-1a 32 of s
//	hash v1(seed, key) = (fnv(key + seed) mod 1000) / 1000
//	hash v2(seed, key) = (fnv(decimal(fnv(seed + key))) mod 10000) / 10000
//	in namespace       = start <= hash v1("__" + id, key) < end
//
// The seed is the experiment's seed, or its key (here its name) when the
// seed is empty. The weights become ranges over [0, 1): with cumulative
// sums c_i of the weights, variant i owns [c_(i-1), c_(i-1) + coverage*w_i),
// half-open; weights that do not sum to 0.99..1.01 are replaced by an equal
// split. A key whose hash is in no range is not in the experiment.
//
// Strings reach FNV-1a as UTF-16 code units (the specification since
// 0.12.0: the JavaScript SDK XORs charCodeAt(i) into the hash, the Go SDK
// does the same since v0.7.0) or, with EncodingUTF8, as UTF-8 bytes (the
// Go SDK before v0.7.0, hash/fnv). They agree on ASCII.

const (
	fnvOffset32 uint32 = 0x811c9dc5
	fnvPrime32  uint32 = 16777619
)

// fnvAdd continues the FNV-1a hash h over b: its bytes, or with u16 its
// UTF-16 code units (b decoded as UTF-8, U+FFFD for each invalid byte).
func fnvAdd(h uint32, b []byte, u16 bool) uint32 {
	if !u16 {
		for _, c := range b {
			h = (h ^ uint32(c)) * fnvPrime32
		}
		return h
	}
	for len(b) > 0 {
		if c := b[0]; c < utf8.RuneSelf { // ASCII: one unit, the byte
			h = (h ^ uint32(c)) * fnvPrime32
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = (h ^ uint32(hi)) * fnvPrime32
			r = lo
		}
		h = (h ^ uint32(r)) * fnvPrime32
	}
	return h
}

// growthBookHash is GrowthBook's hash(seed, key, version) in [0, 1); false
// for a version the SDK does not know (it then assigns nothing).
func growthBookHash(seed, key []byte, version int, u16 bool) (float64, bool) {
	switch version {
	case 0, 1:
		h := fnvAdd(fnvAdd(fnvOffset32, key, u16), seed, u16)
		return float64(h%1000) / 1000, true
	case 2:
		inner := fnvAdd(fnvAdd(fnvOffset32, seed, u16), key, u16)
		var digits [10]byte
		h := fnvAdd(fnvOffset32, strconv.AppendUint(digits[:0], uint64(inner), 10), false)
		return float64(h%10000) / 10000, true
	}
	return 0, false
}

// growthBookRange is a variant's range of GrowthBook hashes, [lo, hi).
type growthBookRange struct{ lo, hi float64 }

// growthBookRanges is GrowthBook's getBucketRanges: the ranges of n
// variants under a coverage (clamped to [0, 1]) and weights (an equal
// split when there are not n of them or they do not sum to 0.99..1.01).
func growthBookRanges(n int, coverage float64, weights []float64) []growthBookRange {
	coverage = min(max(coverage, 0), 1)
	if n <= 0 {
		return nil
	}
	var total float64
	for _, w := range weights {
		total += w
	}
	if len(weights) != n || total < 0.99 || total > 1.01 {
		weights = make([]float64, n)
		for i := range weights {
			weights[i] = 1 / float64(n)
		}
	}
	out := make([]growthBookRange, n)
	var cum float64
	for i, w := range weights {
		start := cum
		cum += w
		// The conversion rounds the product, so that no platform fuses
		// the multiply and the add (FMA) into one rounding the
		// JavaScript SDK does not do: range ends must match it bit for
		// bit, as the "range end includes the user" cases check.
		out[i] = growthBookRange{start, start + float64(coverage*w)}
	}
	return out
}

// growthBookChoose is GrowthBook's chooseVariation: the first range that
// holds h, or -1.
func growthBookChoose(h float64, ranges []growthBookRange) int {
	for i, r := range ranges {
		if h >= r.lo && h < r.hi {
			return i
		}
	}
	return -1
}

// growthBookInNamespace is GrowthBook's inNamespace(key, [id, start, end]).
func growthBookInNamespace(key []byte, ns *namespace, u16 bool) bool {
	h, _ := growthBookHash(ns.seed, key, 1, u16)
	return h >= ns.start && h < ns.end
}

// namespace is a Namespace ready for hashing: seed is "__" + its id.
type namespace struct {
	seed       []byte
	start, end float64
}

// growthBookShares returns the share of an experiment's keys each range
// receives: the number of hash values of the version (1,000 or 10,000
// evenly spaced ones) in each range, over those in all ranges. When a
// range holds none (a coverage of 0, or so small that it misses the
// grid), the shares are those of the ranges at full coverage, full.
func growthBookShares(ranges, full []growthBookRange, version int) []float64 {
	grid := 1000
	if version == 2 {
		grid = 10000
	}
	counts := make([]float64, len(ranges))
	var total float64
	for i := range grid {
		if k := growthBookChoose(float64(i)/float64(grid), ranges); k >= 0 {
			counts[k]++
			total++
		}
	}
	for _, c := range counts {
		if c == 0 {
			total = 0
		}
	}
	if total == 0 {
		for i, r := range full {
			counts[i] = r.hi - r.lo
			total += counts[i]
		}
	}
	for i := range counts {
		counts[i] /= total
	}
	return counts
}
