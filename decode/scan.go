package decode

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/tidwall/gjson"
)

// maxScanPaths bounds the paths one scan captures (a bit mask each).
const maxScanPaths = 32

// pathSet is a set of simple paths (dot-separated object keys) that scan
// captures in the same pass that validates a record value. A path is
// simple when every key is made of letters, digits, '_' and '-' and is not
// all digits (gjson would also index arrays with it); other paths are
// looked up with gjson.
type pathSet struct {
	segs [][]string // by path index
}

// simplePath splits p into keys, or returns nil when p is not simple.
func simplePath(p string) []string {
	if p == "" {
		return nil
	}
	keys := strings.Split(p, ".")
	for _, k := range keys {
		if k == "" {
			return nil
		}
		digits := true
		for i := 0; i < len(k); i++ {
			c := k[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
				digits = false
			default:
				return nil
			}
		}
		if digits {
			return nil
		}
	}
	return keys
}

// add adds a simple path and returns its index, or -1 when p is not
// simple or the set is full.
func (ps *pathSet) add(p string) int {
	keys := simplePath(p)
	if keys == nil || len(ps.segs) == maxScanPaths {
		return -1
	}
	ps.segs = append(ps.segs, keys)
	return len(ps.segs) - 1
}

// span locates a captured value in the scanned text; it holds no pointer,
// so that captures never make a caller's buffer escape.
type span struct {
	typ        gjson.Type // gjson.Null and start == end when absent
	start, end int        // the value's text
	escaped    bool       // a string with escapes
}

// jval is a JSON value as the decoder reads it: gjson.Result's fields
// without the ones it does not need (and half the size).
type jval struct {
	Type gjson.Type // Null when absent
	Raw  string     // the value's text
	Str  string     // a string's text, unescaped
	Num  float64    // a number's value
}

func fromGJSON(r gjson.Result) jval { return jval{r.Type, r.Raw, r.Str, r.Num} }

// into sets *v to the span's value in doc.
func (sp *span) into(doc string, v *jval) {
	*v = jval{}
	if sp.end != 0 {
		v.Type, v.Raw = sp.typ, doc[sp.start:sp.end]
		switch sp.typ {
		case gjson.String:
			v.Str = sp.text(v.Raw)
		case gjson.Number:
			v.Num = parseNumber(bytesconv.Bytes(v.Raw))
		}
	}
}

// unixMilli returns the value of a captured number made of at most 15
// digits (no sign, fraction or exponent) when it is at most
// maxUnixMilli: what parseTime accepts as whole milliseconds, read
// without going through a float64.
func (sp *span) unixMilli(doc string) (int64, bool) {
	if sp.typ != gjson.Number || sp.end == 0 || sp.end-sp.start > 15 {
		return 0, false
	}
	var n int64
	text := doc[sp.start:sp.end]
	if len(text) >= 8 { // the usual 13 digits: eight at once
		d, ok := digits8(binary.LittleEndian.Uint64(bytesconv.Bytes(text)))
		if !ok {
			return 0, false
		}
		n, text = int64(d), text[8:]
	}
	for _, c := range []byte(text) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= maxUnixMilli
}

// text returns the text of the string whose JSON is raw.
func (sp span) text(raw string) string {
	inner := raw[1 : len(raw)-1]
	if sp.escaped {
		return unescape(bytesconv.Bytes(inner))
	}
	return inner
}

// scanner validates one JSON text and captures the values at its paths.
type scanner struct {
	b        []byte
	i        int
	depth    int
	maxDepth int
	ps       *pathSet
	out      []span // by path index
	got      uint32 // paths captured
}

// scanObject reports whether value is one valid JSON object (RFC 8259,
// valid UTF-8) nested at most maxDepth deep, and fills out (one result per
// path of ps; span.value gives what gjson.Get would return for the path:
// the first key that matches at each level, Type Null when absent). On
// false, out is undefined and the caller finds the reason the slow way.
func (ps *pathSet) scanObject(value []byte, maxDepth int, out []span) bool {
	s := scanner{b: value, maxDepth: maxDepth, ps: ps, out: out}
	clear(out)
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	all := uint32(1)<<len(ps.segs) - 1
	if !s.object(all, 0) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) ws() {
	// Compact JSON has none: one comparison decides (every whitespace
	// byte is at most ' ').
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value parses one value at s.i (after whitespace). Paths in capture end
// here; paths in descend continue into it at level if it is an object.
func (s *scanner) value(capture, descend uint32, level int) bool {
	if s.i >= len(s.b) {
		return false
	}
	sp := span{start: s.i}
	ok := false
	switch c := s.b[s.i]; {
	case c == '{':
		ok, sp.typ = s.object(descend, level), gjson.JSON
	case c == '[':
		ok, sp.typ = s.array(), gjson.JSON
	case c == '"':
		sp.escaped, ok = s.str()
		sp.typ = gjson.String
	case c == '-' || c >= '0' && c <= '9':
		ok, sp.typ = s.number(), gjson.Number
	case c == 't':
		ok, sp.typ = s.lit("true"), gjson.True
	case c == 'f':
		ok, sp.typ = s.lit("false"), gjson.False
	case c == 'n':
		ok, sp.typ = s.lit("null"), gjson.Null
	}
	if !ok {
		return false
	}
	if capture &^= s.got; capture != 0 {
		sp.end = s.i
		for m := capture; m != 0; m &= m - 1 {
			s.out[bits.TrailingZeros32(m)] = sp
		}
		s.got |= capture
	}
	return true
}

// enter enters the object or array at s.i, which ends with end; empty
// reports that it is empty (and consumed).
func (s *scanner) enter(end byte) (empty, ok bool) {
	s.depth++
	if s.depth > s.maxDepth {
		return false, false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		s.depth--
		return true, true
	}
	return false, true
}

// next reads what follows a member of a container ending with end: more
// is true after a comma, false once the container is closed.
func (s *scanner) next(end byte) (more, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return true, true
	case end:
		s.i++
		s.depth--
		return false, true
	}
	return false, false
}

// object parses an object at s.i ('{'). mask holds the paths whose first
// level keys matched the enclosing objects' keys.
func (s *scanner) object(mask uint32, level int) bool {
	empty, ok := s.enter('}')
	if empty || !ok {
		return ok
	}
	for more := true; more; {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		kstart := s.i + 1
		escaped, ok := s.str()
		if !ok {
			return false
		}
		var capture, descend uint32
		// Like gjson, the first value found in document order wins: a
		// path is captured once, and searched in every matching object
		// until then.
		if mask &^= s.got; mask != 0 {
			key := bytesconv.String(s.b[kstart : s.i-1])
			if escaped {
				key = unescape(s.b[kstart : s.i-1])
			}
			for m := mask; m != 0; m &= m - 1 {
				p := bits.TrailingZeros32(m)
				segs := s.ps.segs[p]
				if seg := segs[level]; len(seg) != len(key) || seg[0] != key[0] || seg != key {
					continue
				}
				if len(segs) == level+1 {
					capture |= 1 << p
				} else {
					descend |= 1 << p
				}
			}
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !s.value(capture, descend, level+1) {
			return false
		}
		// next's usual answers, without the call (compact JSON).
		if s.i < len(s.b) {
			switch s.b[s.i] {
			case ',':
				s.i++
				s.ws()
				continue
			case '}':
				s.i++
				s.depth--
				return true
			}
		}
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	return true
}

func (s *scanner) array() bool {
	empty, ok := s.enter(']')
	if empty || !ok {
		return ok
	}
	for more := true; more; {
		if !s.value(0, 0, 0) {
			return false
		}
		if more, ok = s.next(']'); !ok {
			return false
		}
	}
	return true
}

// str parses a string at s.i ('"') and leaves s.i after the closing quote.
// escaped reports whether it holds escapes.
func (s *scanner) str() (escaped, ok bool) {
	b := s.b
	i := s.i + 1
	for i < len(b) {
		// Eight bytes at a time up to the first that does not stand for
		// itself; the last few bytes of the value one at a time.
		if len(b)-i >= 8 {
			t := special(binary.LittleEndian.Uint64(b[i:]))
			if t == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(t) >> 3
		} else if plain[b[i]] {
			i++
			continue
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return false, false
					}
				}
				i += 6
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return false, false
			}
			i += size
		}
	}
	return false, false
}

// Byte lanes of a little-endian word.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// special returns w (eight bytes of a string, the first in the low byte)
// with the high bit of its lowest byte that does not stand for itself (not
// plain) set, or 0 when all eight are plain. Bits above that byte may be
// set too (a borrow carries over): only the lowest counts.
func special(w uint64) uint64 {
	q := w ^ '"'*lanes01
	bs := w ^ '\\'*lanes01
	t := (q - lanes01) &^ q // '"' (and the borrows above one)
	t |= (bs - lanes01) &^ bs
	t |= w - 0x20*lanes01 // below 0x20
	t |= w                // 0x80 and above: a multi-byte sequence
	return t & lanes80
}

// plain marks the bytes that stand for themselves in a JSON string: not
// '"', '\\', a control character or the start of a multi-byte sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number parses -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		if i = skipDigits(b, i); i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	s.i = i
	return true
}

// skipDigits returns the index of the first byte of b from i on that is
// not a decimal digit (len(b) if none): eight at a time while it can.
func skipDigits(b []byte, i int) int {
	for len(b)-i >= 8 && isDigits8(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i < len(w) || bytesconv.String(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}
