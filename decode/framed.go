package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/tidwall/gjson"

	"github.com/throttler/throttler/internal/bytesconv"
)

// Framed records (Avro, Protobuf) are decoded by a plan compiled once per
// schema id (and Protobuf message index) for the decoder's paths: it walks
// the payload, skipping what no path needs and validating it as it goes,
// and keeps the values at the paths (framedPlan.run). The fields are then
// read from those values by the same code as JSON's (Decoder.fields).
//
// Strings are not copied: they point into the record value, like JSON's.
// Numbers need a text too (a numeric key or id is its text); it is written
// into an arena of the partition's Scan, memory that is only ever appended
// to, so that a Decoded string stays valid as long as anything holds it.

// framedPlan extracts the values at the decoder's paths from one payload.
type framedPlan interface {
	// run walks payload, storing the value of path i in out[i] (out is
	// cleared), and returns a Reason and a detail if the payload is bad.
	run(payload []byte, out []jval, ar *arena, maxDepth int) (Reason, string)
}

// framedScan is the room of a partition's framed records.
type framedScan struct {
	format Format
	vals   []jval // by path index
	arena  arena
	// the plan of the last record: most topics use one schema at a time
	planID  int
	planIdx []byte // Protobuf: the message index's bytes
	plan    framedPlan
}

// framedState is a decoder's state of framed formats: its options and the
// plans compiled so far, shared by every partition.
type framedState struct {
	cfg   framedCfg
	names []string // the decoder's paths by index, as given
	// numOnly are the paths read only as numbers (score, expression
	// fields, time): their numbers need no text.
	numOnly uint32

	mu   sync.Mutex
	byID *simplelru.LRU[int, *schemaEntry] // at most maxSchemas
}

// maxSchemas bounds the schema ids a decoder keeps plans of: the least
// recently used goes first (and is compiled again if it comes back).
const maxSchemas = 1024

// schemaEntry is what a decoder made of one schema id.
type schemaEntry struct {
	format Format
	bad    string // why the schema cannot be used (ReasonBadSchema); "" when it can
	avro   *avroPlan
	proto  *protoSchema
}

// initFramed checks the options of framed formats and adds the extra paths.
func (d *Decoder) initFramed() error {
	c := d.cfg.framed
	byID, _ := simplelru.NewLRU[int, *schemaEntry](maxSchemas, nil) // errors only on a size below 1
	st := &framedState{cfg: c, byID: byID}
	for _, p := range c.extra {
		if p != "" && d.ps.index(p) < 0 {
			d.ps.add(p)
		}
	}
	for _, segs := range d.ps.segs {
		st.names = append(st.names, strings.Join(segs, "."))
	}
	d.framed = st
	st.numOnly = d.numOnlyPaths()
	framed := c.def.Framed()
	for _, f := range c.topics {
		framed = framed || f.Framed()
	}
	if !framed {
		return nil
	}
	if c.schemas == nil {
		return &ConfigError{Option: "WithSchemas", Reason: "avro and protobuf records need a schema registry"}
	}
	paths := append([]string{d.cfg.budgetPath, d.cfg.keyPath, d.cfg.idPath, d.cfg.scorePath, d.cfg.timePath}, c.extra...)
	if d.expr != nil {
		paths = append(paths, d.expr.Fields()...)
	}
	for _, p := range paths {
		if p != "" && d.ps.index(p) < 0 {
			return &ConfigError{Option: "paths", Reason: fmt.Sprintf("%q: avro and protobuf fields are named by dot-separated names (letters, digits, '_', '-'), at most %d paths", p, maxScanPaths)}
		}
	}
	return nil
}

// numOnlyPaths returns the paths read only as numbers.
func (d *Decoder) numOnlyPaths() uint32 {
	var num, text uint32
	mark := func(m *uint32, at int) {
		if at >= 0 {
			*m |= 1 << at
		}
	}
	mark(&num, d.scoreAt)
	mark(&num, d.timeAt)
	for _, at := range d.exprAt {
		mark(&num, at)
	}
	for _, at := range []int{d.budgetAt, d.keyAt, d.idAt} {
		mark(&text, at)
	}
	for _, p := range d.cfg.framed.extra {
		mark(&text, d.ps.index(p))
	}
	return num &^ text
}

// FormatOf returns the format of topic's records.
func (d *Decoder) FormatOf(topic string) Format {
	if f, ok := d.cfg.framed.topics[topic]; ok {
		return f
	}
	return d.cfg.framed.def
}

// NewScan returns the room of the decoder's scan for a partition of topic,
// in the topic's format (FormatOf). The decode stage makes one per
// partition.
func (d *Decoder) NewScan(topic string) *Scan {
	f := d.FormatOf(topic)
	if !f.Framed() {
		return &Scan{}
	}
	return &Scan{framed: &framedScan{format: f, vals: make([]jval, len(d.ps.segs)), planID: -1}}
}

// decodeFramed is DecodeWith for a record of a framed format.
func (d *Decoder) decodeFramed(key, value []byte, ts time.Time, dst *Decoded, s *Scan) error {
	dst.Clear()
	fs := s.framed
	switch {
	case len(value) == 0:
		return recErr(StageDecode, ReasonEmptyValue, "", "")
	case len(value) > d.cfg.maxBytes:
		return recErr(StageDecode, ReasonTooLarge, "", "")
	case len(value) < 5 || value[0] != 0:
		return recErr(StageDecode, ReasonNotFramed, "", "no magic byte 0 and schema id")
	}
	id := int(binary.BigEndian.Uint32(value[1:5]))
	p, payload, err := d.planFor(fs, id, value[5:])
	if err != nil {
		return err
	}
	if reason, detail := p.run(payload, fs.vals, &fs.arena, d.cfg.maxDepth); reason != "" {
		return recErr(StageDecode, reason, "", fmt.Sprintf("schema %d: %s", id, detail))
	}
	dst.scan, dst.scanBy = s, d
	src := values{framed: fs.vals}
	return d.fields(key, ts, dst, &src, nil, false)
}

// planFor returns the plan of schema id (and, for Protobuf, of the message
// index at the start of body) and the payload after the index. The
// schema is looked at before the index: a record of an Avro schema on a
// Protobuf topic has no index, and is refused for its schema.
func (d *Decoder) planFor(fs *framedScan, id int, body []byte) (framedPlan, []byte, error) {
	var idx []byte
	badIndex := false
	if fs.format == FormatProtobuf {
		if n := indexLen(body); n < 0 {
			badIndex = true
		} else {
			idx, body = body[:n], body[n:]
		}
	}
	if !badIndex && fs.plan != nil && fs.planID == id && bytes.Equal(fs.planIdx, idx) {
		return fs.plan, body, nil
	}
	e, err := d.framed.entry(id, d)
	if err != nil {
		return nil, nil, err
	}
	var p framedPlan
	bad := e.bad
	switch {
	case bad != "":
	case e.format != fs.format:
		bad = fmt.Sprintf("a %v schema on a %v topic", e.format, fs.format)
	case badIndex:
		return nil, nil, recErr(StageDecode, ReasonNotFramed, "", "schema "+strconv.Itoa(id)+": bad message index")
	case e.format == FormatAvro:
		p = e.avro
	default:
		if p, bad = e.proto.plan(idx, &d.ps, d.framed.numOnly); bad == "" && p == nil {
			bad = "no message at this index"
		}
	}
	if bad != "" {
		return nil, nil, recErr(StageDecode, ReasonBadSchema, "", fmt.Sprintf("schema %d: %s", id, bad))
	}
	fs.plan, fs.planID, fs.planIdx = p, id, append(fs.planIdx[:0], idx...)
	return p, body, nil
}

// entry returns what the decoder made of schema id, asking the Schemas the
// first time.
func (st *framedState) entry(id int, d *Decoder) (*schemaEntry, error) {
	st.mu.Lock()
	e, _ := st.byID.Get(id)
	st.mu.Unlock()
	if e != nil {
		return e, nil
	}
	s, err := st.cfg.schemas.Schema(id)
	if errors.Is(err, ErrUnknownSchema) {
		return nil, &RecordError{Stage: StageDecode, Reason: ReasonUnknownSchema, Detail: "schema " + strconv.Itoa(id), Err: err}
	}
	if err != nil {
		return nil, waitError(id, err)
	}
	e = &schemaEntry{format: s.Format}
	switch s.Format {
	case FormatAvro:
		e.avro, err = compileAvro(s, &d.ps, st.numOnly)
	case FormatProtobuf:
		e.proto, err = compileProtoSchema(s)
	default:
		err = fmt.Errorf("format %v", s.Format)
	}
	if err != nil {
		e.bad = err.Error()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if prev, _ := st.byID.Get(id); prev != nil {
		return prev, nil
	}
	st.byID.Add(id, e)
	return e, nil
}

// indexLen returns the length of the Protobuf message index at the start
// of b (a zigzag varint count, then that many zigzag varints; a single 0
// stands for the first message), or -1 when it is not one.
func indexLen(b []byte) int {
	n, i := binary.Varint(b)
	if i <= 0 || n < 0 || n > maxIndexDepth {
		return -1
	}
	at := i
	for range n {
		v, k := binary.Varint(b[at:])
		if k <= 0 || v < 0 {
			return -1
		}
		at += k
	}
	return at
}

// maxIndexDepth bounds the nesting of a message index.
const maxIndexDepth = 32

// readIndex returns the message index of a valid index text (indexLen).
func readIndex(b []byte) []int {
	n, i := binary.Varint(b)
	if n == 0 {
		return []int{0}
	}
	out := make([]int, 0, n)
	for range n {
		v, k := binary.Varint(b[i:])
		out = append(out, int(v))
		i += k
	}
	return out
}

// Field returns the value at path of the record value dst was decoded
// from, as gjson reads it: the decoder's capture when path is one of the
// decoder's paths (its fields and Paths), else gjson's lookup in value. A
// framed record has no other path: it reads as absent.
func (dst *Decoded) Field(value []byte, path string) gjson.Result {
	if d := dst.scanBy; d != nil {
		fs := dst.scan.framed
		if at := d.ps.index(path); at >= 0 {
			var v jval
			if fs != nil {
				v = fs.vals[at]
			} else {
				dst.scan.res[at].into(bytesconv.String(value), &v)
			}
			return gjson.Result{Type: v.Type, Raw: v.Raw, Str: v.Str, Num: v.Num}
		}
		if fs != nil {
			return gjson.Result{}
		}
	}
	return gjson.GetBytes(value, path)
}

// index returns the index of simple path p in the set, or -1.
func (ps *pathSet) index(p string) int {
	for i, segs := range ps.segs {
		if joinedIs(segs, p) {
			return i
		}
	}
	return -1
}

// joinedIs reports whether the keys joined by dots are p, without joining.
func joinedIs(segs []string, p string) bool {
	for i, s := range segs {
		if i > 0 {
			if len(p) == 0 || p[0] != '.' {
				return false
			}
			p = p[1:]
		}
		if len(p) < len(s) || p[:len(s)] != s {
			return false
		}
		p = p[len(s):]
	}
	return p == ""
}

// arena holds the text of the numbers of framed records: it is only ever
// appended to (a full chunk is left to the strings that point into it), so
// that the strings stay valid as long as something holds them.
type arena struct{ buf []byte }

const arenaChunk = 8 << 10

func (a *arena) room(n int) {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, arenaChunk)
	}
}

func (a *arena) since(start int) string { return bytesconv.String(a.buf[start:len(a.buf):len(a.buf)]) }

// intVal returns the JSON-like value of an integer, its text written
// unless numOnly (a nil arena).
func (a *arena) intVal(v int64) jval {
	if a == nil {
		return jval{Type: gjson.Number, Num: float64(v)}
	}
	a.room(20)
	start := len(a.buf)
	a.buf = strconv.AppendInt(a.buf, v, 10)
	return jval{Type: gjson.Number, Raw: a.since(start), Num: float64(v)}
}

// uintVal returns the value of an unsigned integer, as intVal.
func (a *arena) uintVal(v uint64) jval {
	if a == nil {
		return jval{Type: gjson.Number, Num: float64(v)}
	}
	a.room(20)
	start := len(a.buf)
	a.buf = strconv.AppendUint(a.buf, v, 10)
	return jval{Type: gjson.Number, Raw: a.since(start), Num: float64(v)}
}

// floatVal returns the value of a float of bits 32 or 64, as intVal.
func (a *arena) floatVal(v float64, bits int) jval {
	if a == nil {
		return jval{Type: gjson.Number, Num: v}
	}
	a.room(32)
	start := len(a.buf)
	a.buf = strconv.AppendFloat(a.buf, v, 'g', -1, bits)
	return jval{Type: gjson.Number, Raw: a.since(start), Num: v}
}

// strVal returns the value of a string (or bytes) in the record value.
func strVal(b []byte) jval { return jval{Type: gjson.String, Str: bytesconv.String(b)} }

// boolVal returns the value of a boolean.
func boolVal(v bool) jval {
	if v {
		return jval{Type: gjson.True, Raw: "true"}
	}
	return jval{Type: gjson.False, Raw: "false"}
}

// nested is the value of a record, message, array or map: not a scalar.
var nested = jval{Type: gjson.JSON}

// store sets out[p] to v for every path p of mask.
func store(out []jval, mask uint32, v jval) {
	for m := mask; m != 0; m &= m - 1 {
		out[bits.TrailingZeros32(m)] = v
	}
}
