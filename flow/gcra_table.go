package flow

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// capShard holds some of a Cap's keys in an open-addressing hash table
// (linear probing, tombstone-free) of 32-byte slots, two to a 64-byte cache
// line. A slot holds a key's TAT and, for a key of up to capInline bytes,
// the key itself; a longer key is kept in keys, and its slot holds its hash,
// place and length. A key's home is the first slot of a line picked by its
// hash: a key of up to capInline bytes is usually found, its TAT read and
// written, in that one cache line, the only memory a lookup touches beyond
// the key it is given. None of it holds pointers.
//
// The slots of a table over 32 KiB start on a page boundary (the
// allocator's large objects do), so its lines are cache lines; smaller
// tables are in cache anyway.
type capShard struct {
	lines   []capLine // never full; nil when empty
	keys    []byte    // the records of long keys, back to back
	live    int       // keys held: the slots in use
	garbage int       // bytes of keys no slot refers to any more
}

// capSlot is one key: word 0 is its TAT (Unix nanoseconds). The low byte of
// word 3, the tag, is 0 in an empty slot (all zero), n+1 for a key of n <=
// capInline bytes, or capLong. Words 1 to 3 of a key of n bytes hold, with
// the key's bytes read as little-endian words (capPack):
//
//   - n < 8: the key, zero-padded; 0; the tag.
//   - 8 <= n < 16: bytes 0 to 7; bytes n-8 to n-1; the tag.
//   - 16 <= n <= 23: bytes 0 to 7; 8 to 15; n-8 to n-1 with its first byte,
//     which is also in word 2, replaced by the tag.
//   - a longer key: two 64-bit hashes of it under independent random
//     seeds; the offset of its record in capShard.keys << 8 | the tag. The
//     record is the key's length as a uvarint, then its bytes.
//
// A lookup of a short key compares the three words with the same encoding
// of the key it seeks: no tag to match first, no other memory to read. A
// lookup of a long key compares its two hashes and the tag, and reads no
// other memory either: a long key is known by its 128-bit hash, which two
// distinct keys share with a probability of 2^-128 (about 10^-27 among a
// million keys), so its bytes are kept only to be listed (All, SweepFunc).
type capSlot [4]uint64

// capLine is a cache line of slots. Slot j of a shard is slot j%capLineSlots
// of line j/capLineSlots.
type capLine [capLineSlots]capSlot

// size returns the number of slots.
func (s *capShard) size() int { return len(s.lines) * capLineSlots }

// at returns slot j.
func (s *capShard) at(j int) *capSlot { return &s.lines[j/capLineSlots][j%capLineSlots] }

const (
	capInline    = 23   // the longest key a slot holds
	capLong      = 0xff // the tag of a slot of a key longer than capInline
	capLineSlots = 2    // slots in a 64-byte cache line
	capMinSlots  = 8
	capMaxKeys   = 1<<24 - 1 // a shard's keys: about a billion in a Cap
	// A table grows past 5/8 full, to 1/2 full: fuller, fewer keys would be
	// in their home line (about 3/4 of them at 3/4 full, 5/6 at 5/8).
	capLoadNum, capLoadDen = 5, 8
)

// capPack returns words 1 to 3 of the slot of a key of up to capInline
// bytes, loading the key a word at a time (overlapping loads, no copy).
func capPack(key []byte) (w1, w2, w3 uint64) {
	n := len(key)
	if n < 8 {
		return capPackSmall(key), 0, uint64(n + 1)
	}
	w1, w3 = capLoad64(key, 0), uint64(n+1)
	if n < 16 {
		return w1, capLoad64(key, n-8), w3
	}
	return w1, capLoad64(key, 8), capLoad64(key, n-8)&^0xff | w3
}

// capPackSmall returns the bytes of a key shorter than 8 bytes, zero-padded.
func capPackSmall(key []byte) uint64 {
	switch n := len(key); {
	case n >= 4:
		return capLoad32(key, 0) | capLoad32(key, n-4)<<(8*(n-4))
	case n > 0:
		// Bytes 0, n/2 and n-1 are all of them.
		return uint64(key[0]) | uint64(key[n/2])<<(8*(n/2)) | uint64(key[n-1])<<(8*(n-1))
	}
	return 0
}

// capLoad64 returns the 8 bytes of key at i, little-endian.
func capLoad64(key []byte, i int) uint64 { return binary.LittleEndian.Uint64(key[i:]) }

// capLoad32 returns the 4 bytes of key at i, little-endian.
func capLoad32(key []byte, i int) uint64 { return uint64(binary.LittleEndian.Uint32(key[i:])) }

// key returns the bytes of the key of slot sl, in buf if it is short.
func (s *capShard) key(sl *capSlot, buf *[capInline + 1]byte) []byte {
	tag := int(byte(sl[3]))
	if tag == capLong {
		_, key := capLongRecord(s.keys, sl)
		return key
	}
	n := tag - 1
	le := binary.LittleEndian
	switch {
	case n >= 16:
		le.PutUint64(buf[n-8:], sl[3]) // its first byte comes from word 2
		le.PutUint64(buf[0:], sl[1])
		le.PutUint64(buf[8:], sl[2])
	case n >= 8:
		le.PutUint64(buf[n-8:], sl[2])
		le.PutUint64(buf[0:], sl[1])
	default:
		le.PutUint64(buf[0:], sl[1])
	}
	return buf[:n]
}

// capHash hashes keys. The hash of a key picks its shard (low 6 bits) and
// its home line in the shard (high 32 bits). A key of up to capInline bytes
// is hashed from the words of its slot (capPack), which the lookup has at
// hand anyway and which hash again without unpacking, by two rounds of a
// 64×64→128-bit multiply folded to 64 bits, under random keys; a longer key
// by hash/maphash under two seeds, the first hash placing it and both
// identifying it.
type capHash struct {
	seed, seed2 maphash.Seed // a long key's two hashes
	k           [4]uint64
}

func newCapHash() capHash {
	return capHash{seed: maphash.MakeSeed(), seed2: maphash.MakeSeed(),
		k: [4]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64()}}
}

// capLongRecord returns the record in keys of the long key of slot sl
// (its length as a uvarint, then its bytes), and the key's bytes.
func capLongRecord(keys []byte, sl *capSlot) (record, key []byte) {
	off := sl[3] >> 8
	n, w := binary.Uvarint(keys[off:])
	end := off + uint64(w) + n
	return keys[off:end], keys[end-n : end]
}

// short returns the hash of the short key whose slot words are w1, w2, w3.
func (k *capHash) short(w1, w2, w3 uint64) uint64 {
	hi, lo := bits.Mul64(w1^k.k[0], w2^k.k[1])
	hi, lo = bits.Mul64(hi^lo^k.k[2], w3^k.k[3])
	return hi ^ lo
}

// slot returns the hash of the key of slot sl.
func (k *capHash) slot(sl *capSlot) uint64 {
	if byte(sl[3]) == capLong {
		return sl[1]
	}
	return k.short(sl[1], sl[2], sl[3])
}

// locate finds the shard of key and its slot sl there, or nil; i is the
// number of the slot, or of the empty slot where the key would be inserted.
// It returns the key's hash.
func (c *Cap) locate(key []byte) (s *capShard, h uint64, sl *capSlot, i int) {
	if len(key) > capInline {
		h = maphash.Bytes(c.hash.seed, key)
		s = &c.shards[h%CapShards]
		sl, i = s.findLong(h, maphash.Bytes(c.hash.seed2, key))
		return s, h, sl, i
	}
	w1, w2, w3 := capPack(key)
	h = c.hash.short(w1, w2, w3)
	s = &c.shards[h%CapShards]
	if len(s.lines) == 0 {
		return s, h, nil, 0
	}
	sl, i = s.findShort(s.home(h)*capLineSlots, w1, w2, w3)
	return s, h, sl, i
}

// capBytes returns the bytes of key without copying them. A Cap only reads
// keys, and copies those it keeps.
func capBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

// home returns the home line of a key with hash h.
func (s *capShard) home(h uint64) int { return capHome(h, len(s.lines)) }

// capHome returns the home line of a key with hash h in a table of n lines.
func capHome(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

// findShort returns the slot of the short key whose slot words are w1, w2,
// w3, or nil, probing from slot i; and the number of that slot, or of the
// empty slot where the key would be inserted.
func (s *capShard) findShort(i int, w1, w2, w3 uint64) (*capSlot, int) {
	for {
		sl := s.at(i)
		if sl[1] == w1 && sl[2] == w2 && sl[3] == w3 {
			return sl, i
		}
		if sl[3] == 0 {
			return nil, i
		}
		if i++; i == s.size() {
			i = 0
		}
	}
}

// findLong is findShort for a key longer than capInline with hashes h and
// h2.
func (s *capShard) findLong(h, h2 uint64) (*capSlot, int) {
	if len(s.lines) == 0 {
		return nil, 0
	}
	for i := s.home(h) * capLineSlots; ; {
		sl := s.at(i)
		if sl[1] == h && sl[2] == h2 && byte(sl[3]) == capLong {
			return sl, i
		}
		if sl[3] == 0 {
			return nil, i
		}
		if i++; i == s.size() {
			i = 0
		}
	}
}

// insert stores in s a key that locate did not find, and returns its slot,
// whose TAT the caller sets; i is the slot and h the hash locate returned.
func (c *Cap) insert(s *capShard, i int, key []byte, h uint64) *capSlot {
	if (s.live+1)*capLoadDen > s.size()*capLoadNum {
		if s.live >= capMaxKeys {
			panic("flow: Cap shard full (16M keys)")
		}
		s.resize(&c.hash, capLinesFor(s.live+1))
		_, _, _, i = c.locate(key)
	}
	sl := s.at(i)
	if len(key) <= capInline {
		sl[1], sl[2], sl[3] = capPack(key)
	} else {
		sl[1], sl[2], sl[3] = h, maphash.Bytes(c.hash.seed2, key), uint64(len(s.keys))<<8|capLong
		s.keys = binary.AppendUvarint(s.keys, uint64(len(key)))
		s.keys = append(s.keys, key...)
	}
	s.live++
	return sl
}

// capLinesFor returns the table size in lines for n keys: 1/2 full.
func capLinesFor(n int) int {
	return max(capMinSlots, 2*n+capLineSlots) / capLineSlots
}

// resize moves the keys into a new table of n lines (nil when n is 0),
// compacting keys on the way.
func (s *capShard) resize(k *capHash, n int) {
	old, oldKeys, garbage := s.lines, s.keys, s.garbage
	s.lines, s.keys, s.garbage = nil, nil, 0
	if n == 0 {
		return
	}
	s.lines = make([]capLine, n)
	if len(oldKeys) > garbage {
		s.keys = make([]byte, 0, len(oldKeys)-garbage)
	}
	for j := range old {
		for sl := range old[j] {
			sl := &old[j][sl]
			if sl[3] == 0 {
				continue
			}
			if byte(sl[3]) == capLong {
				s.moveLong(sl, oldKeys)
			}
			i := s.home(k.slot(sl)) * capLineSlots
			for s.at(i)[3] != 0 {
				if i++; i == s.size() {
					i = 0
				}
			}
			*s.at(i) = *sl
		}
	}
}

// remove empties slot i, and moves back the later slots of its probe run so
// that every key stays reachable from its home slot.
func (s *capShard) remove(k *capHash, i int) {
	if sl := s.at(i); byte(sl[3]) == capLong {
		record, _ := capLongRecord(s.keys, sl)
		s.garbage += len(record)
	}
	s.live--
	n := s.size()
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		sl := s.at(j)
		if sl[3] == 0 {
			break
		}
		// sl stays if its home lies after the hole, up to j.
		home := s.home(k.slot(sl)) * capLineSlots
		dHome, dHole := j-home, j-i
		if dHome < 0 {
			dHome += n
		}
		if dHole < 0 {
			dHole += n
		}
		if dHome < dHole {
			continue
		}
		*s.at(i) = *sl
		i = j
	}
	*s.at(i) = capSlot{}
}

// moveLong appends to keys the record of the long key of slot sl, held in
// old, and points sl at it.
func (s *capShard) moveLong(sl *capSlot, old []byte) {
	record, _ := capLongRecord(old, sl)
	sl[3] = uint64(len(s.keys))<<8 | capLong
	s.keys = append(s.keys, record...)
}

// compactKeys drops the bytes of forgotten long keys once they are most of
// keys.
func (s *capShard) compactKeys() {
	if s.garbage < 4096 || 2*s.garbage < len(s.keys) {
		return
	}
	old := s.keys
	s.keys = make([]byte, 0, len(old)-s.garbage)
	for j := range s.size() {
		if sl := s.at(j); byte(sl[3]) == capLong {
			s.moveLong(sl, old)
		}
	}
	s.garbage = 0
}

// sweep forgets the keys whose TAT is not after now, and gives memory back
// when the table is mostly empty.
func (s *capShard) sweep(k *capHash, now int64) (removed int) {
	n := s.size()
	for j := range n {
		if sl := s.at(j); sl[3] != 0 && int64(sl[0]) <= now {
			removed++
		}
	}
	if removed == 0 {
		return 0
	}
	if size := capLinesFor(s.live - removed); s.live == removed || 2*size < len(s.lines) {
		// Copy the keys that stay into a smaller table.
		for j := range n {
			if sl := s.at(j); sl[3] != 0 && int64(sl[0]) <= now {
				if byte(sl[3]) == capLong {
					record, _ := capLongRecord(s.keys, sl)
					s.garbage += len(record)
				}
				sl[3] = 0
			}
		}
		s.live -= removed
		if s.live == 0 {
			size = 0
		}
		s.resize(k, size)
		return removed
	}
	// Remove in place, starting after an empty slot so that no probe run
	// wraps past the start: a removal moves back only slots not yet visited.
	start := 0
	for s.at(start)[3] != 0 {
		start++
	}
	for j := 1; j < n; j++ {
		i := start + j
		if i >= n {
			i -= n
		}
		for sl := s.at(i); sl[3] != 0 && int64(sl[0]) <= now; {
			s.remove(k, i) // may move a later key into slot i
		}
	}
	s.compactKeys()
	return removed
}
