package decode

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"unicode/utf8"

	"github.com/bufbuild/protocompile"
	"github.com/tidwall/gjson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Protobuf records are read by a plan of protoMsgs: for each message on
// the way to the decoder's paths, the fields that matter by number; any
// other field (and a field of the wrong wire type, as proto.Unmarshal
// does) is skipped with protowire. protocompile parses the registry's
// .proto text into descriptors; the plan reads the wire format itself,
// allocating nothing.
//
// As the Protobuf JSON mapping does, a field without presence (a proto3
// scalar that is not optional) reads as its zero value when absent (its
// message being there), an enum as its value's name, a wrapper
// (google.protobuf.StringValue…) as its value and a
// google.protobuf.Timestamp as Unix milliseconds. The last occurrence of a
// field wins, a message's occurrences merge, setting a oneof member clears
// the others.

// protoSchema is a compiled .proto file and the plans of its messages.
type protoSchema struct {
	file protoreflect.FileDescriptor

	mu    sync.Mutex
	plans map[string]*protoPlan // by message index text
}

// mainFile names the registry's schema among its imports.
const mainFile = "throttler-registry-schema.proto"

func compileProtoSchema(s Schema) (*protoSchema, error) {
	files := map[string]string{mainFile: s.Text}
	for _, r := range s.References {
		files[r.Name] = r.Text
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files),
	})}
	fds, err := c.Compile(context.Background(), mainFile)
	if err != nil {
		return nil, err
	}
	return &protoSchema{file: fds[0], plans: map[string]*protoPlan{}}, nil
}

// plan returns the plan of the message at index idx (indexLen's text), or
// why there is none.
func (s *protoSchema) plan(idx []byte, ps *pathSet, numOnly uint32) (framedPlan, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.plans[string(idx)]; ok {
		return p, ""
	}
	index := readIndex(idx)
	msgs := s.file.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i >= msgs.Len() {
			return nil, fmt.Sprintf("no message at index %v", index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	c := protoCompiler{ps: ps, numOnly: numOnly, defaults: make([]jval, len(ps.segs))}
	p := &protoPlan{root: c.msg(md, uint32(1)<<len(ps.segs)-1, 0), defaults: c.defaults}
	s.plans[string(idx)] = p
	return p, ""
}

// protoPlan reads one message type for a decoder's paths.
type protoPlan struct {
	root     *protoMsg
	defaults []jval // by path: the value of an absent field without presence
}

// protoMsg is what a plan reads of one message.
type protoMsg struct {
	byNum    []*protoField // by field number, for numbers up to maxDense
	sparse   map[protowire.Number]*protoField
	implicit uint32 // paths ending at a field of it without presence
}

const maxDense = 1024

func (m *protoMsg) field(n protowire.Number) *protoField {
	if int(n) < len(m.byNum) {
		return m.byNum[n]
	}
	return m.sparse[n]
}

func (m *protoMsg) put(n protowire.Number, f *protoField) {
	if n < maxDense {
		if int(n) >= len(m.byNum) {
			m.byNum = append(m.byNum, make([]*protoField, int(n)+1-len(m.byNum))...)
		}
		m.byNum[n] = f
		return
	}
	if m.sparse == nil {
		m.sparse = map[protowire.Number]*protoField{}
	}
	m.sparse[n] = f
}

// protoField is how a plan reads one field.
type protoField struct {
	kind      protoreflect.Kind
	list      bool      // repeated or map: a value that is not a scalar
	capture   uint32    // paths whose value this is
	oneof     uint32    // paths under the other members of its oneof
	msg       *protoMsg // paths go on into its message
	enum      protoreflect.EnumValueDescriptors
	timestamp bool // a google.protobuf.Timestamp read as milliseconds
	numOnly   bool // its paths read a number only: no text
}

type protoCompiler struct {
	ps       *pathSet
	numOnly  uint32
	defaults []jval
}

// msg compiles md for the paths of mask, whose keys matched up to level.
func (c *protoCompiler) msg(md protoreflect.MessageDescriptor, mask uint32, level int) *protoMsg {
	m := &protoMsg{}
	fields := md.Fields()
	under := make([]uint32, fields.Len()) // paths through each field
	for i := range fields.Len() {
		fd := fields.Get(i)
		for b := mask; b != 0; b &= b - 1 {
			p := bits.TrailingZeros32(b)
			if key := c.ps.segs[p][level]; key == string(fd.Name()) || key == fd.JSONName() {
				under[i] |= 1 << p
			}
		}
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		var others uint32
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			for j := range od.Fields().Len() {
				if o := od.Fields().Get(j); o != fd {
					others |= under[o.Index()]
				}
			}
		}
		if under[i] == 0 && others == 0 {
			continue
		}
		f := c.field(fd, under[i], level)
		f.oneof = others
		m.put(fd.Number(), f)
		if !fd.HasPresence() && !f.list {
			m.implicit |= f.capture
			c.setDefaults(f.capture, fd)
		}
	}
	return m
}

// field compiles fd for the paths of mask, which name it at level.
func (c *protoCompiler) field(fd protoreflect.FieldDescriptor, mask uint32, level int) *protoField {
	f := &protoField{kind: fd.Kind(), list: fd.IsList() || fd.IsMap()}
	if e := fd.Enum(); e != nil {
		f.enum = e.Values()
	}
	var descend uint32
	for b := mask; b != 0; b &= b - 1 {
		if p := bits.TrailingZeros32(b); len(c.ps.segs[p]) == level+1 {
			f.capture |= 1 << p
		} else {
			descend |= 1 << p
		}
	}
	f.numOnly = f.capture&^c.numOnly == 0
	if fd.Kind() != protoreflect.MessageKind || f.list {
		return f // paths cannot go on into it
	}
	md := fd.Message()
	switch name := md.FullName(); {
	case name == "google.protobuf.Timestamp":
		f.timestamp = true
	case wrappers[name] && f.capture != 0: // its value, or its zero value
		inner := md.Fields().ByNumber(1)
		f.msg = &protoMsg{implicit: f.capture}
		f.msg.put(1, &protoField{kind: inner.Kind(), capture: f.capture, numOnly: f.numOnly})
		c.setDefaults(f.capture, inner)
		f.capture = 0
	case descend != 0:
		f.msg = c.msg(md, descend, level+1)
	}
	return f
}

var wrappers = map[protoreflect.FullName]bool{
	"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true,
	"google.protobuf.Int64Value": true, "google.protobuf.UInt64Value": true,
	"google.protobuf.Int32Value": true, "google.protobuf.UInt32Value": true,
	"google.protobuf.BoolValue": true, "google.protobuf.StringValue": true,
	"google.protobuf.BytesValue": true,
}

// setDefaults sets the default of the paths of mask to fd's zero value.
func (c *protoCompiler) setDefaults(mask uint32, fd protoreflect.FieldDescriptor) {
	var v jval
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		v = jval{Type: gjson.String}
	case protoreflect.BoolKind:
		v = boolVal(false)
	case protoreflect.EnumKind:
		v = jval{Type: gjson.Number, Raw: "0"}
		if ev := fd.Enum().Values().ByNumber(0); ev != nil {
			v = jval{Type: gjson.String, Str: string(ev.Name())}
		}
	default:
		v = jval{Type: gjson.Number, Raw: "0"}
	}
	store(c.defaults, mask, v)
}

// protoReader walks one message.
type protoReader struct {
	out      []jval
	ar       *arena
	got      uint32 // paths set
	present  uint32 // paths without presence whose message is there
	maxDepth int
	bad      Reason
	detail   string
}

func (p *protoPlan) run(payload []byte, out []jval, ar *arena, maxDepth int) (Reason, string) {
	clear(out)
	r := protoReader{out: out, ar: ar, maxDepth: maxDepth}
	if !r.message(p.root, payload, 1) {
		return r.bad, r.detail
	}
	for m := r.present &^ r.got; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		out[i] = p.defaults[i]
	}
	return "", ""
}

func (r *protoReader) fail(reason Reason, detail string) bool {
	r.bad, r.detail = reason, detail
	return false
}

// message reads the fields of one message of m from b.
func (r *protoReader) message(m *protoMsg, b []byte, depth int) bool {
	if depth > r.maxDepth {
		return r.fail(ReasonTooDeep, fmt.Sprintf("nested deeper than %d", r.maxDepth))
	}
	r.present |= m.implicit
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r.fail(ReasonSchemaMismatch, "bad field tag: "+protowire.ParseError(n).Error())
		}
		b = b[n:]
		f := m.field(num)
		if f != nil && f.accepts(typ) {
			n = r.field(f, typ, b, depth)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			if r.bad == "" {
				r.fail(ReasonSchemaMismatch, fmt.Sprintf("field %d: %v", num, protowire.ParseError(n)))
			}
			return false
		}
		b = b[n:]
	}
	return true
}

// accepts reports whether a value of wire type typ is one of f's (else it
// is an unknown field, as for proto.Unmarshal).
func (f *protoField) accepts(typ protowire.Type) bool {
	want := wireTypes[f.kind]
	return typ == want || f.list && typ == protowire.BytesType && want != protowire.StartGroupType
}

var wireTypes = func() (t [protoreflect.Sint64Kind + 1]protowire.Type) {
	for _, k := range []protoreflect.Kind{protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind,
		protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind} {
		t[k] = protowire.VarintType
	}
	for _, k := range []protoreflect.Kind{protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind} {
		t[k] = protowire.Fixed32Type
	}
	for _, k := range []protoreflect.Kind{protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind} {
		t[k] = protowire.Fixed64Type
	}
	for _, k := range []protoreflect.Kind{protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind} {
		t[k] = protowire.BytesType
	}
	t[protoreflect.GroupKind] = protowire.StartGroupType
	return t
}()

// field reads one value of f from b and returns its length (negative: a
// protowire error, or 0 with r.bad set... see message).
func (r *protoReader) field(f *protoField, typ protowire.Type, b []byte, depth int) int {
	if f.oneof != 0 {
		for m := f.oneof; m != 0; m &= m - 1 {
			r.out[bits.TrailingZeros32(m)] = jval{}
		}
		r.got &^= f.oneof
	}
	var v jval
	var n int
	switch typ {
	case protowire.VarintType:
		var x uint64
		if x, n = protowire.ConsumeVarint(b); n >= 0 && f.capture != 0 {
			v = r.varint(f, x)
		}
	case protowire.Fixed32Type:
		var x uint32
		if x, n = protowire.ConsumeFixed32(b); n >= 0 && f.capture != 0 {
			v = r.fixed32(f, x)
		}
	case protowire.Fixed64Type:
		var x uint64
		if x, n = protowire.ConsumeFixed64(b); n >= 0 && f.capture != 0 {
			v = r.fixed64(f, x)
		}
	case protowire.BytesType:
		var x []byte
		if x, n = protowire.ConsumeBytes(b); n >= 0 && !r.lengthDelimited(f, x, depth, &v) {
			return -1
		}
	default: // a group
		n, v = protowire.ConsumeFieldValue(0, typ, b), nested
	}
	if n >= 0 && f.capture != 0 {
		if f.list {
			v = nested
		}
		store(r.out, f.capture, v)
		r.got |= f.capture
	}
	return n
}

// lengthDelimited reads a string, bytes, message or packed list into *v.
func (r *protoReader) lengthDelimited(f *protoField, b []byte, depth int, v *jval) bool {
	switch {
	case f.list:
		*v = nested
	case f.kind == protoreflect.StringKind:
		if f.capture != 0 && !utf8.Valid(b) {
			return r.fail(ReasonInvalidUTF8, "a string field is not UTF-8")
		}
		*v = strVal(b)
	case f.kind == protoreflect.BytesKind:
		*v = strVal(b)
	case f.timestamp:
		var ok bool
		if *v, ok = r.timestamp(f, b); !ok {
			return r.fail(ReasonSchemaMismatch, "a google.protobuf.Timestamp does not parse")
		}
	default:
		*v = nested
		if f.msg != nil {
			return r.message(f.msg, b, depth+1)
		}
	}
	return r.bad == ""
}

// timestamp returns a google.protobuf.Timestamp's Unix milliseconds, or
// false if it does not parse.
func (r *protoReader) timestamp(f *protoField, b []byte) (jval, bool) {
	var secs, nanos int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return jval{}, false
		}
		b = b[n:]
		if typ == protowire.VarintType && (num == 1 || num == 2) {
			x, k := protowire.ConsumeVarint(b)
			if k < 0 {
				return jval{}, false
			}
			if num == 1 {
				secs = int64(x)
			} else {
				nanos = int64(int32(x))
			}
			b = b[k:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return jval{}, false
		}
		b = b[n:]
	}
	return r.text(f).floatVal(float64(secs)*1e3+float64(nanos)/1e6, 64), true
}

// text returns the arena of f's numbers' text, nil when it needs none.
func (r *protoReader) text(f *protoField) *arena {
	if f.numOnly {
		return nil
	}
	return r.ar
}

func (r *protoReader) varint(f *protoField, x uint64) jval {
	ar := r.text(f)
	switch f.kind {
	case protoreflect.BoolKind:
		return boolVal(x != 0)
	case protoreflect.EnumKind:
		if ev := f.enum.ByNumber(protoreflect.EnumNumber(int32(x))); ev != nil {
			return jval{Type: gjson.String, Str: string(ev.Name())}
		}
		return ar.intVal(int64(int32(x)))
	case protoreflect.Int32Kind:
		return ar.intVal(int64(int32(x)))
	case protoreflect.Uint32Kind:
		return ar.uintVal(uint64(uint32(x)))
	case protoreflect.Uint64Kind:
		return ar.uintVal(x)
	case protoreflect.Sint32Kind:
		return ar.intVal(int64(int32(protowire.DecodeZigZag(x & math.MaxUint32))))
	case protoreflect.Sint64Kind:
		return ar.intVal(protowire.DecodeZigZag(x))
	}
	return ar.intVal(int64(x)) // int64
}

func (r *protoReader) fixed32(f *protoField, x uint32) jval {
	ar := r.text(f)
	switch f.kind {
	case protoreflect.FloatKind:
		return ar.floatVal(float64(math.Float32frombits(x)), 32)
	case protoreflect.Sfixed32Kind:
		return ar.intVal(int64(int32(x)))
	}
	return ar.uintVal(uint64(x))
}

func (r *protoReader) fixed64(f *protoField, x uint64) jval {
	ar := r.text(f)
	switch f.kind {
	case protoreflect.DoubleKind:
		return ar.floatVal(math.Float64frombits(x), 64)
	case protoreflect.Sfixed64Kind:
		return ar.intVal(int64(x))
	}
	return ar.uintVal(x)
}
