// Package decode reads throttler's events: it validates a record value as
// one JSON object within size and depth limits and extracts the fields of
// an event (budget, key, id, score, time) in a single pass of its own JSON
// scanner, falling back to gjson for paths the scanner does not capture and
// for the exact reason a record is refused. Refused records are
// *RecordError, with a Reason from a fixed list.
package decode

import (
	"math"
	"strconv"
	"time"

	"github.com/throttler/throttler/internal/bytesconv"
	"github.com/throttler/throttler/scoreexpr"
	"github.com/tidwall/gjson"
)

// Decoder defaults.
const (
	DefaultBudgetPath = "budget"
	// DefaultMaxBytes leaves room for the headers the worker adds under
	// the 1 MiB a record of an output topic may take (Kafka's default
	// message.max.bytes is 1,048,588; see ProducerLimits).
	DefaultMaxBytes = 1_000_000
	DefaultMaxDepth = 32
)

// Decoded holds the fields of one event. Strings may share memory with the
// record value; they are valid as long as the record is.
type Decoded struct {
	Budget string    // budget name
	Key    string    // key from KeyPath, or the record key
	ID     string    // id from IDPath, "" when not configured
	Score  float64   // finite and non-negative once the score stage ran
	Time   time.Time // event time, the record timestamp when TimePath is unset

	// The scan DecodeWith kept for Score, valid when scanBy is the
	// decoder that made it.
	scan   *Scan
	scanBy *Decoder
}

// Clear sets d to Decoded{}, field by field, skipping
// stores that change nothing: the pipeline's Decoded lives in a reused
// Event on the heap, and a whole-struct store there pays a bulk write
// barrier over every pointer slot while the GC marks.
func (d *Decoded) Clear() {
	if d.Budget != "" {
		d.Budget = ""
	}
	if d.Key != "" {
		d.Key = ""
	}
	if d.ID != "" {
		d.ID = ""
	}
	d.Score = 0
	if d.Time != (time.Time{}) {
		d.Time = time.Time{}
	}
	if d.scanBy != nil {
		d.scanBy = nil
	}
}

// Decoder validates record values and extracts the fields of an event. It
// is immutable once built and safe for concurrent use. Decode and Score
// allocate nothing for a valid record whose strings have no escapes.
type Decoder struct {
	cfg  decodeCfg
	expr *scoreexpr.Expr

	// The simple paths, captured while the value is validated; the index
	// of each field's path in ps, -1 when unset or not simple (then
	// gjson looks it up).
	ps                                     pathSet
	budgetAt, keyAt, idAt, scoreAt, timeAt int
	exprAt                                 []int // by expression field

	framed *framedState // formats, schemas and compiled plans (framed.go)
}

// NewDecoder returns a decoder of opts (the field paths, limits and
// formats; see Opt). It accepts every budget name: which budgets
// exist is the caller's to tell (the worker's decide stage asks its flow
// tree, whose budgets change while it runs). Invalid options give a
// *ConfigError wrapping ErrInvalidConfig.
func NewDecoder(opts ...Opt) (*Decoder, error) {
	c := decodeCfg{budgetPath: DefaultBudgetPath, maxBytes: DefaultMaxBytes, maxDepth: DefaultMaxDepth}
	for _, o := range opts {
		o.apply(&c)
	}
	d := &Decoder{cfg: c}
	switch {
	case c.budgetPath == "":
		return nil, &ConfigError{Option: "BudgetPath", Reason: "must not be empty"}
	case c.maxBytes <= 0:
		return nil, &ConfigError{Option: "MaxBytes", Reason: "must be positive"}
	case c.maxDepth <= 0:
		return nil, &ConfigError{Option: "MaxDepth", Reason: "must be positive"}
	}
	if c.scoreExpr != "" {
		e, err := scoreexpr.ParseExpr(c.scoreExpr)
		if err != nil {
			return nil, err
		}
		d.expr = e
	}
	d.budgetAt = d.ps.add(c.budgetPath)
	d.keyAt = d.ps.add(c.keyPath)
	d.idAt = d.ps.add(c.idPath)
	d.scoreAt = d.ps.add(c.scorePath)
	d.timeAt = d.ps.add(c.timePath)
	if d.expr != nil {
		for _, f := range d.expr.Fields() {
			d.exprAt = append(d.exprAt, d.ps.add(f))
		}
	}
	if err := d.initFramed(); err != nil {
		return nil, err
	}
	return d, nil
}

// scanBuf is the stack room of one scan's results; more paths take a
// slice from the heap.
const scanBuf = 8

// results returns a slice for the scan results of d.
func (d *Decoder) results(buf *[scanBuf]span) []span {
	if n := len(d.ps.segs); n > scanBuf {
		return make([]span, n)
	}
	return buf[:len(d.ps.segs)]
}

// set sets v to the value at path: res[at] when the path was captured by
// the scan, else gjson's lookup.
func (v *jval) set(doc string, path string, at int, res []span, scanned bool) {
	if scanned && at >= 0 {
		res[at].into(doc, v)
		return
	}
	*v = fromGJSON(gjson.Get(doc, path))
}

// HasID reports whether events carry an id (IDPath).
func (d *Decoder) HasID() bool { return d.cfg.idPath != "" }

// MaxBytes returns the largest record value accepted (MaxBytes).
func (d *Decoder) MaxBytes() int { return d.cfg.maxBytes }

// MaxDepth returns the deepest nesting accepted (MaxDepth).
func (d *Decoder) MaxDepth() int { return d.cfg.maxDepth }

// Scored reports whether events carry a score (ScorePath or ScoreExpr).
func (d *Decoder) Scored() bool { return d.expr != nil || d.cfg.scorePath != "" }

// Decode validates value and fills dst with every field but Score. key and
// ts are the record key and timestamp. Errors are *RecordError with stage
// "decode".
func (d *Decoder) Decode(key, value []byte, ts time.Time, dst *Decoded) error {
	return d.DecodeWith(key, value, ts, dst, nil)
}

// Scan is the room of the decoder's one-pass scan for one partition: the
// decode stage keeps one per partition and hands it to DecodeWith, so that
// Score reads the fields DecodeWith captured instead of looking them up
// again. The zero value is ready; a Scan is not safe for concurrent use.
type Scan struct {
	res    []span
	framed *framedScan // the room of framed formats (framed.go); nil for JSON
}

// DecodeWith is Decode keeping the scan's results in s (nil: none), where
// Score finds them until the next DecodeWith with s.
func (d *Decoder) DecodeWith(key, value []byte, ts time.Time, dst *Decoded, s *Scan) error {
	if s == nil && d.cfg.framed.def.Framed() {
		s = d.NewScan("")
	}
	if s != nil && s.framed != nil {
		return d.decodeFramed(key, value, ts, dst, s)
	}
	if s == nil {
		var buf [scanBuf]span
		_, err := d.decode(key, value, ts, dst, d.results(&buf))
		return err
	}
	n := len(d.ps.segs)
	if cap(s.res) < n {
		s.res = make([]span, n)
	}
	res := s.res[:n]
	scanned, err := d.decode(key, value, ts, dst, res)
	if scanned {
		dst.scan, dst.scanBy = s, d
	}
	return err
}

// decode validates value and fills dst, the scan's results going to res
// (len(d.ps.segs)); scanned reports whether the scan filled them.
func (d *Decoder) decode(key, value []byte, ts time.Time, dst *Decoded, res []span) (scanned bool, err error) {
	dst.Clear()
	// One pass validates and captures the simple paths; a value it
	// refuses is examined again the slow way for the exact reason.
	scanned = len(value) <= d.cfg.maxBytes && d.ps.scanObject(value, d.cfg.maxDepth, res)
	if !scanned {
		if reason := d.check(value); reason != "" {
			return false, recErr(StageDecode, reason, "", "")
		}
	}
	src := values{doc: bytesconv.String(value)}
	return scanned, d.fields(key, ts, dst, &src, res, scanned)
}

// values is where the decoder reads the fields of one record: the JSON
// text, or the values a framed (Avro, Protobuf) record's plan extracted.
// The captures of a JSON scan are passed beside it: the strings of doc
// go to the Decoded, and a slice in the same struct would go with them
// (escape analysis does not tell fields apart), taking the stack room of
// a scan without Scan to the heap.
type values struct {
	doc    string
	framed []jval // by path index; nil for JSON
}

// get sets *v to the value at path (index at in the decoder's paths): a
// framed record's, or res[at] when the JSON scan captured it, else
// gjson's.
func (src *values) get(v *jval, path string, at int, res []span, scanned bool) {
	if src.framed != nil {
		*v = jval{}
		if at >= 0 {
			*v = src.framed[at]
		}
		return
	}
	v.set(src.doc, path, at, res, scanned)
}

func (d *Decoder) fields(key []byte, ts time.Time, dst *Decoded, src *values, res []span, scanned bool) error {
	// budget
	var r jval
	src.get(&r, d.cfg.budgetPath, d.budgetAt, res, scanned)
	switch r.Type {
	case gjson.String:
		dst.Budget = r.Str
	case gjson.Null:
		return recErr(StageDecode, ReasonMissingBudget, d.cfg.budgetPath, "")
	default:
		return recErr(StageDecode, ReasonBudgetType, d.cfg.budgetPath, r.Type.String())
	}

	// key
	if d.cfg.keyPath == "" {
		dst.Key = bytesconv.String(key)
	} else {
		src.get(&r, d.cfg.keyPath, d.keyAt, res, scanned)
		switch r.Type {
		case gjson.String:
			dst.Key = r.Str
		case gjson.Number:
			dst.Key = r.Raw
		case gjson.Null:
		default:
			return recErr(StageDecode, ReasonKeyType, d.cfg.keyPath, r.Type.String())
		}
	}
	if d.cfg.requireKey && dst.Key == "" {
		return recErr(StageDecode, ReasonMissingKey, d.cfg.keyPath, "")
	}

	// id
	if d.cfg.idPath != "" {
		src.get(&r, d.cfg.idPath, d.idAt, res, scanned)
		switch r.Type {
		case gjson.String:
			dst.ID = r.Str
		case gjson.Number:
			dst.ID = r.Raw
		case gjson.Null:
			return recErr(StageDecode, ReasonMissingID, d.cfg.idPath, "")
		default:
			return recErr(StageDecode, ReasonIDType, d.cfg.idPath, r.Type.String())
		}
	}

	// time
	if d.cfg.timePath == "" {
		dst.Time = ts
	} else {
		// The usual value, whole Unix milliseconds, straight from the
		// text; anything else (and every refusal) by parseTime.
		if scanned && d.timeAt >= 0 {
			if ms, ok := res[d.timeAt].unixMilli(src.doc); ok {
				dst.Time = time.UnixMilli(ms)
				return nil
			}
		}
		dst.Time = ts // as before the field is read
		src.get(&r, d.cfg.timePath, d.timeAt, res, scanned)
		t, reason := parseTime(&r)
		if reason != "" {
			return recErr(StageDecode, reason, d.cfg.timePath, "")
		}
		dst.Time = t
	}
	return nil
}

// maxUnixMilli is 9999-12-31T23:59:59.999Z.
const maxUnixMilli = 253402300799999

func parseTime(r *jval) (time.Time, Reason) {
	switch r.Type {
	case gjson.Number:
		if !(r.Num >= 0 && r.Num <= maxUnixMilli) { // also false for NaN
			return time.Time{}, ReasonBadTime
		}
		ms := math.Floor(r.Num)
		if ms == r.Num { // whole milliseconds, the usual case
			return time.UnixMilli(int64(ms)), ""
		}
		ns := int64((r.Num - ms) * 1e6)
		return time.UnixMilli(int64(ms)).Add(time.Duration(ns)), ""
	case gjson.String:
		t, err := time.Parse(time.RFC3339Nano, r.Str)
		if err != nil {
			return time.Time{}, ReasonBadTime
		}
		return t, ""
	case gjson.Null:
		return time.Time{}, ReasonMissingTime
	default:
		return time.Time{}, ReasonTimeType
	}
}

// Score sets dst.Score from the score expression or the score field of
// value, which Decode must have accepted into dst. Without either, the
// score is 0. Errors are *RecordError with stage "score".
func (d *Decoder) Score(value []byte, dst *Decoded) error {
	src := values{doc: bytesconv.String(value)}
	var res []span
	scanned := false
	switch {
	case dst.scanBy != d:
	case dst.scan.framed != nil:
		src.framed = dst.scan.framed.vals
	default:
		res, scanned = dst.scan.res[:len(d.ps.segs)], true
	}
	return d.score(&src, res, scanned, dst)
}

// score is Score reading the fields from src (and res, when scanned).
func (d *Decoder) score(src *values, res []span, scanned bool, dst *Decoded) error {
	var v float64
	switch {
	case d.expr != nil:
		var fail scoreexpr.Failure
		var field string
		v, fail, field = d.evalExpr(src, res, scanned)
		if fail != "" {
			return recErr(StageScore, Reason(fail), field, "")
		}
	case d.cfg.scorePath != "":
		var r jval
		src.get(&r, d.cfg.scorePath, d.scoreAt, res, scanned)
		switch r.Type {
		case gjson.Number:
			v = r.Num
		case gjson.Null:
			return recErr(StageScore, ReasonMissingScore, d.cfg.scorePath, "")
		default:
			return recErr(StageScore, ReasonScoreType, d.cfg.scorePath, r.Type.String())
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return recErr(StageScore, ReasonScoreNotFinite, d.cfg.scorePath, "")
		}
	default:
		dst.Score = 0
		return nil
	}
	if v < 0 {
		return recErr(StageScore, ReasonScoreNegative, d.cfg.scorePath, strconv.FormatFloat(v, 'g', -1, 64))
	}
	dst.Score = v
	return nil
}

// evalExpr evaluates the score expression over the fields of src.
func (d *Decoder) evalExpr(src *values, res []span, scanned bool) (float64, scoreexpr.Failure, string) {
	fields := d.expr.Fields()
	var vars [scoreexpr.MaxFields]float64
	var r jval
	for i, at := range d.exprAt {
		src.get(&r, fields[i], at, res, scanned)
		if fail := scoreexpr.FieldValue(r.Type, r.Num, &vars[i]); fail != "" {
			return 0, fail, fields[i]
		}
	}
	v, fail := d.expr.Run(&vars)
	return v, fail, ""
}
