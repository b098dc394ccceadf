package decode

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"github.com/tidwall/gjson"
)

// Avro records are read by a plan of avroNodes, one per schema node on the
// way to the decoder's paths; what no path enters is skipped by nodes
// shared per schema (recursive types included). hamba/avro parses the
// schema (named types, references, logical types); the plan walks the
// binary encoding itself, which allocates nothing.

type avroKind uint8

const (
	avNull avroKind = iota
	avBool
	avLong // int and long: zigzag varints
	avFloat
	avDouble
	avString
	avBytes
	avFixed
	avEnum
	avArray
	avMap
	avUnion
	avRecord
)

// avroNode reads (or skips) one value of a schema.
type avroNode struct {
	kind     avroKind
	capture  uint32      // paths whose value this is
	toMilli  float64     // timestamp logical types: divisor to milliseconds; 0 for none
	size     int         // fixed
	symbols  []string    // enum
	fields   []*avroNode // record, in order
	branches []*avroNode // union
	items    *avroNode   // array items, map values
	empty    bool        // always encoded in zero bytes
	numOnly  bool        // its paths read a number only: no text
}

// avroPlan is the plan of one Avro schema for a decoder's paths.
type avroPlan struct{ root *avroNode }

// compileAvro parses s (and its references, dependencies first) and
// compiles its plan for the paths of ps.
func compileAvro(s Schema, ps *pathSet, numOnly uint32) (*avroPlan, error) {
	sch, err := parseAvro(s)
	if err != nil {
		return nil, err
	}
	c := avroCompiler{ps: ps, numOnly: numOnly, skip: map[avro.Schema]*avroNode{}}
	return &avroPlan{root: c.node(sch, uint32(1)<<len(ps.segs)-1, 0)}, nil
}

// parseAvro parses s, its references first.
func parseAvro(s Schema) (avro.Schema, error) {
	cache := &avro.SchemaCache{} // named types of this schema only
	for _, r := range s.References {
		if _, err := avro.ParseWithCache(r.Text, "", cache); err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.Name, err)
		}
	}
	return avro.ParseWithCache(s.Text, "", cache)
}

type avroCompiler struct {
	ps      *pathSet
	numOnly uint32
	skip    map[avro.Schema]*avroNode // nodes no path enters, by schema
}

// node compiles s for the paths of mask, whose keys matched the enclosing
// records' fields up to level.
func (c *avroCompiler) node(s avro.Schema, mask uint32, level int) *avroNode {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if mask == 0 {
		return c.skipNode(s)
	}
	if u, ok := s.(*avro.UnionSchema); ok { // a union is its branch: same paths
		n := &avroNode{kind: avUnion}
		for _, b := range u.Types() {
			n.branches = append(n.branches, c.node(b, mask, level))
		}
		return n
	}
	var capture, descend uint32
	for m := mask; m != 0; m &= m - 1 {
		if p := bits.TrailingZeros32(m); len(c.ps.segs[p]) == level {
			capture |= 1 << p
		} else {
			descend |= 1 << p
		}
	}
	n := &avroNode{}
	rec, isRecord := s.(*avro.RecordSchema)
	if !isRecord || descend == 0 {
		c.fill(n, s)
	} else { // paths go on into its fields
		n.kind = avRecord
		n.fields = make([]*avroNode, len(rec.Fields()))
		for i, f := range rec.Fields() {
			var sub uint32
			for m := descend; m != 0; m &= m - 1 {
				p := bits.TrailingZeros32(m)
				if key := c.ps.segs[p][level]; key == f.Name() || slices.Contains(f.Aliases(), key) {
					sub |= 1 << p
				}
			}
			n.fields[i] = c.node(f.Type(), sub, level+1)
		}
	}
	n.capture = capture
	n.numOnly = capture&^c.numOnly == 0
	return n
}

// skipNode returns the shared node that skips values of s.
func (c *avroCompiler) skipNode(s avro.Schema) *avroNode {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n := c.skip[s]; n != nil {
		return n
	}
	n := &avroNode{}
	c.skip[s] = n // before its children: a recursive type finds it
	c.fill(n, s)
	return n
}

// fill sets n to read values of s, its children skipped.
func (c *avroCompiler) fill(n *avroNode, s avro.Schema) {
	switch s := s.(type) {
	case *avro.RecordSchema:
		n.kind, n.empty = avRecord, true
		for _, f := range s.Fields() {
			fn := c.skipNode(f.Type())
			n.fields = append(n.fields, fn)
			n.empty = n.empty && fn.empty
		}
	case *avro.UnionSchema:
		n.kind = avUnion
		for _, b := range s.Types() {
			n.branches = append(n.branches, c.skipNode(b))
		}
	case *avro.ArraySchema:
		n.kind, n.items = avArray, c.skipNode(s.Items())
	case *avro.MapSchema:
		n.kind, n.items = avMap, c.skipNode(s.Values())
	case *avro.EnumSchema:
		n.kind, n.symbols = avEnum, s.Symbols()
	case *avro.FixedSchema:
		n.kind, n.size, n.empty = avFixed, s.Size(), s.Size() == 0
	case *avro.PrimitiveSchema:
		n.kind = primitiveKinds[s.Type()]
		n.empty = s.Type() == avro.Null
		if l := s.Logical(); l != nil {
			switch l.Type() {
			case avro.TimestampMillis, avro.LocalTimestampMillis:
				n.toMilli = 1
			case avro.TimestampMicros, avro.LocalTimestampMicros:
				n.toMilli = 1000
			}
		}
	default: // null
		n.kind, n.empty = avNull, true
	}
}

var primitiveKinds = map[avro.Type]avroKind{
	avro.Null: avNull, avro.Boolean: avBool, avro.Int: avLong, avro.Long: avLong,
	avro.Float: avFloat, avro.Double: avDouble, avro.String: avString, avro.Bytes: avBytes,
}

// avroReader walks one payload.
type avroReader struct {
	b        []byte
	i        int
	out      []jval
	ar       *arena
	depth    int
	maxDepth int
	bad      Reason
	detail   string
}

func (p *avroPlan) run(payload []byte, out []jval, ar *arena, maxDepth int) (Reason, string) {
	clear(out)
	r := avroReader{b: payload, out: out, ar: ar, maxDepth: maxDepth}
	if !r.value(p.root) {
		return r.bad, r.detail
	}
	if r.i != len(r.b) {
		return ReasonSchemaMismatch, fmt.Sprintf("%d bytes after the datum", len(r.b)-r.i)
	}
	return "", ""
}

// fail records why the payload does not match and returns false.
func (r *avroReader) fail(what string) bool {
	r.bad, r.detail = ReasonSchemaMismatch, fmt.Sprintf("%s at byte %d", what, r.i)
	return false
}

// long reads a zigzag varint.
func (r *avroReader) long() (int64, bool) {
	var u uint64
	for k, s := 0, uint(0); k < 10; k, s = k+1, s+7 {
		if r.i >= len(r.b) {
			return 0, r.fail("truncated number")
		}
		c := r.b[r.i]
		r.i++
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), true
		}
	}
	return 0, r.fail("number longer than 10 bytes")
}

// take returns the next n bytes.
func (r *avroReader) take(n int64) ([]byte, bool) {
	if n < 0 || n > int64(len(r.b)-r.i) {
		return nil, r.fail(fmt.Sprintf("length %d out of range", n))
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, true
}

// value reads (or skips) one value of n.
func (r *avroReader) value(n *avroNode) bool {
	switch n.kind {
	case avRecord, avArray, avMap:
		if r.depth++; r.depth > r.maxDepth {
			r.bad, r.detail = ReasonTooDeep, fmt.Sprintf("nested deeper than %d", r.maxDepth)
			return false
		}
		ok := r.container(n)
		r.depth--
		if ok && n.capture != 0 {
			store(r.out, n.capture, nested)
		}
		return ok
	case avUnion:
		i, ok := r.long()
		if !ok {
			return false
		}
		if i < 0 || i >= int64(len(n.branches)) {
			return r.fail(fmt.Sprintf("union branch %d out of range", i))
		}
		return r.value(n.branches[i])
	}
	return r.scalar(n)
}

// container reads a record, an array or a map.
func (r *avroReader) container(n *avroNode) bool {
	if n.kind == avRecord {
		for _, f := range n.fields {
			if !r.value(f) {
				return false
			}
		}
		return true
	}
	for { // blocks of items, the last of count 0
		count, ok := r.long()
		switch {
		case !ok:
			return false
		case count == 0:
			return true
		case count < 0: // the block's size follows; its items must fill it
			size, ok := r.long()
			if !ok {
				return false
			}
			if count = -count; count < 0 || size < 0 || size > int64(len(r.b)-r.i) {
				return r.fail(fmt.Sprintf("block of %d bytes out of range", size))
			}
			end := r.i + int(size)
			if !r.items(n, count) {
				return false
			}
			if r.i != end {
				return r.fail(fmt.Sprintf("block items end %d bytes from its size", end-r.i))
			}
			continue
		}
		if !r.items(n, count) {
			return false
		}
	}
}

// items reads count items of an array or a map.
func (r *avroReader) items(n *avroNode, count int64) bool {
	if n.kind == avArray && n.items.empty {
		return true
	}
	if count > int64(len(r.b)-r.i) { // every item takes a byte at least
		return r.fail(fmt.Sprintf("%d items in %d bytes", count, len(r.b)-r.i))
	}
	for range count {
		if n.kind == avMap {
			l, ok := r.long()
			if !ok {
				return false
			}
			if _, ok := r.take(l); !ok {
				return false
			}
		}
		if !r.value(n.items) {
			return false
		}
	}
	return true
}

// scalar reads one value of a primitive, enum or fixed type.
func (r *avroReader) scalar(n *avroNode) bool {
	var v jval
	ar := r.ar
	if n.numOnly {
		ar = nil
	}
	switch n.kind {
	case avNull:
	case avBool:
		b, ok := r.take(1)
		if !ok {
			return false
		}
		if b[0] > 1 {
			return r.fail("boolean not 0 or 1")
		}
		v = boolVal(b[0] == 1)
	case avLong:
		x, ok := r.long()
		if !ok {
			return false
		}
		if n.capture != 0 {
			v = ar.intVal(x)
			if n.toMilli != 0 {
				v.Num /= n.toMilli
			}
		}
	case avFloat:
		b, ok := r.take(4)
		if !ok {
			return false
		}
		v = ar.floatVal(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case avDouble:
		b, ok := r.take(8)
		if !ok {
			return false
		}
		if n.capture != 0 {
			v = ar.floatVal(math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
		}
	case avString, avBytes, avFixed:
		return r.bytes(n)
	case avEnum:
		i, ok := r.long()
		if !ok {
			return false
		}
		if i < 0 || i >= int64(len(n.symbols)) {
			return r.fail(fmt.Sprintf("enum symbol %d out of range", i))
		}
		v = jval{Type: gjson.String, Str: n.symbols[i]}
	}
	if n.capture != 0 {
		store(r.out, n.capture, v)
	}
	return true
}

// bytes reads a string, bytes or fixed; a string at a path must be UTF-8.
func (r *avroReader) bytes(n *avroNode) bool {
	size := int64(n.size)
	if n.kind != avFixed {
		var ok bool
		if size, ok = r.long(); !ok {
			return false
		}
	}
	b, ok := r.take(size)
	if !ok || n.capture == 0 {
		return ok
	}
	if n.kind == avString && !utf8.Valid(b) {
		r.bad, r.detail = ReasonInvalidUTF8, fmt.Sprintf("string at byte %d", r.i-len(b))
		return false
	}
	store(r.out, n.capture, strVal(b))
	return true
}
