package consumer

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

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

// DecodeOpt configures a Decoder.
type DecodeOpt interface{ applyDecode(*decodeCfg) }

type decodeOpt func(*decodeCfg)

func (o decodeOpt) applyDecode(c *decodeCfg) { o(c) }

type decodeCfg struct {
	budgetPath string
	keyPath    string
	requireKey bool
	idPath     string
	scorePath  string
	scoreExpr  string
	timePath   string
	maxBytes   int
	maxDepth   int
}

// BudgetPath sets the JSON path (gjson syntax) of the field naming the
// event's budget. Default "budget". The field is required.
func BudgetPath(p string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.budgetPath = p }) }

// KeyPath sets the JSON path of the event's key (the unit of per-key caps
// and of experiment bucketing). Default "": the Kafka record key.
func KeyPath(p string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.keyPath = p }) }

// RequireKey makes an absent, null or empty key a bad record
// (ReasonMissingKey). Default false.
func RequireKey(required bool) DecodeOpt {
	return decodeOpt(func(c *decodeCfg) { c.requireKey = required })
}

// IDPath sets the JSON path of the event's id (a string or number, used in
// logs and tests). Default "": no id. When set, the field is required.
func IDPath(p string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.idPath = p }) }

// ScorePath sets the JSON path of a numeric score. Default "": no score
// field (score 0 unless ScoreExpr is set). When set, the field is required.
func ScorePath(p string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.scorePath = p }) }

// ScoreExpr sets a score expression (see Expr); it takes precedence over
// ScorePath. Default "": none.
func ScoreExpr(src string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.scoreExpr = src }) }

// TimePath sets the JSON path of the event time: a number of Unix
// milliseconds or an RFC 3339 string. Default "": the record timestamp.
// When set, the field is required.
func TimePath(p string) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.timePath = p }) }

// MaxBytes sets the largest record value accepted, in bytes. Default
// DefaultMaxBytes (1,000,000). A larger value needs larger
// message.max.bytes on the output topics and ProducerBatchMaxBytes in
// ClientOpts.
func MaxBytes(n int) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.maxBytes = n }) }

// MaxDepth sets the deepest nesting of objects and arrays accepted. Default
// DefaultMaxDepth (32).
func MaxDepth(n int) DecodeOpt { return decodeOpt(func(c *decodeCfg) { c.maxDepth = n }) }

// Decoded holds the fields of one event. Strings may share memory with the
// record value; they are valid as long as the record is.
type Decoded struct {
	Budget      string    // budget name
	BudgetIndex int       // index of Budget in the decoder's budget list, -1 if the list is empty
	Key         string    // key from KeyPath, or the record key
	ID          string    // id from IDPath, "" when not configured
	Score       float64   // finite and non-negative once the score stage ran
	Time        time.Time // event time, the record timestamp when TimePath is unset
}

// clear sets d to Decoded{BudgetIndex: -1}, field by field, skipping
// stores that change nothing: the pipeline's Decoded lives in a reused
// Event on the heap, which Event.reset has just cleared, and a
// whole-struct store there pays a bulk write barrier over every pointer
// slot while the GC marks.
func (d *Decoded) clear() {
	if d.Budget != "" {
		d.Budget = ""
	}
	d.BudgetIndex = -1
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
}

// Decoder validates record values and extracts the fields of an event. It
// is immutable once built and safe for concurrent use. Decode and Score
// allocate nothing for a valid record whose strings have no escapes.
type Decoder struct {
	cfg  decodeCfg
	expr *Expr
	tab  *budgetTable // the budgets given to NewDecoder; nil when none

	// The simple paths, captured while the value is validated; the index
	// of each field's path in ps, -1 when unset or not simple (then
	// gjson looks it up).
	ps                                     pathSet
	budgetAt, keyAt, idAt, scoreAt, timeAt int
	exprAt                                 []int // by expression field
}

// NewDecoder returns a decoder accepting the given budget names (an event
// naming another budget is a bad record; with no names any budget is
// accepted and BudgetIndex is -1).
func NewDecoder(budgets []string, opts ...DecodeOpt) (*Decoder, error) {
	c := decodeCfg{budgetPath: DefaultBudgetPath, maxBytes: DefaultMaxBytes, maxDepth: DefaultMaxDepth}
	for _, o := range opts {
		o.applyDecode(&c)
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
	if len(budgets) > 0 {
		tab, err := newBudgetTable(budgets)
		if err != nil {
			return nil, err
		}
		d.tab = tab
	}
	if c.scoreExpr != "" {
		e, err := ParseExpr(c.scoreExpr)
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
		for _, f := range d.expr.fields {
			d.exprAt = append(d.exprAt, d.ps.add(f))
		}
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

// field returns the value at path: res[at] when the path was captured by
// the scan, else gjson's lookup.
func field(doc string, path string, at int, res []span, scanned bool) jval {
	var v jval
	v.set(doc, path, at, res, scanned)
	return v
}

// set sets v to the value at path, as field returns it.
func (v *jval) set(doc string, path string, at int, res []span, scanned bool) {
	if scanned && at >= 0 {
		res[at].into(doc, v)
		return
	}
	*v = fromGJSON(gjson.Get(doc, path))
}

// Budgets returns the budget names, in index order.
func (d *Decoder) Budgets() []string {
	if d.tab == nil {
		return nil
	}
	return d.tab.names
}

// Scored reports whether events carry a score (ScorePath or ScoreExpr).
func (d *Decoder) Scored() bool { return d.expr != nil || d.cfg.scorePath != "" }

// Decode validates value and fills dst with every field but Score. key and
// ts are the record key and timestamp. Errors are *RecordError with stage
// "decode".
func (d *Decoder) Decode(key, value []byte, ts time.Time, dst *Decoded) error {
	var buf [scanBuf]span
	_, err := d.decode(key, value, ts, dst, d.results(&buf), d.tab)
	return err
}

// decode is Decode with room for the scan's results (len(d.ps.segs)),
// which it fills when scanned is true, for Score to use, and with the
// budget table to index budgets by (nil: accept any budget).
func (d *Decoder) decode(key, value []byte, ts time.Time, dst *Decoded, res []span, tab *budgetTable) (scanned bool, err error) {
	dst.clear()
	// One pass validates and captures the simple paths; a value it
	// refuses is examined again the slow way for the exact reason.
	scanned = len(value) <= d.cfg.maxBytes && d.ps.scanObject(value, d.cfg.maxDepth, res)
	if !scanned {
		if reason := d.check(value); reason != "" {
			return false, recErr(StageDecode, reason, "", "")
		}
	}
	return scanned, d.fields(key, value, ts, dst, res, scanned, tab)
}

func (d *Decoder) fields(key, value []byte, ts time.Time, dst *Decoded, res []span, scanned bool, tab *budgetTable) error {
	doc := stringOf(value)

	// budget
	var r jval
	r.set(doc, d.cfg.budgetPath, d.budgetAt, res, scanned)
	switch r.Type {
	case gjson.String:
		dst.Budget = r.Str
	case gjson.Null:
		return recErr(StageDecode, ReasonMissingBudget, d.cfg.budgetPath, "")
	default:
		return recErr(StageDecode, ReasonBudgetType, d.cfg.budgetPath, r.Type.String())
	}
	if tab != nil {
		i := tab.index(dst.Budget)
		if i < 0 {
			return recErr(StageDecode, ReasonUnknownBudget, d.cfg.budgetPath, strconv.Quote(dst.Budget))
		}
		dst.BudgetIndex = i
	}

	// key
	if d.cfg.keyPath == "" {
		dst.Key = stringOf(key)
	} else {
		r.set(doc, d.cfg.keyPath, d.keyAt, res, scanned)
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
		r.set(doc, d.cfg.idPath, d.idAt, res, scanned)
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
			if ms, ok := res[d.timeAt].unixMilli(doc); ok {
				dst.Time = time.UnixMilli(ms)
				return nil
			}
		}
		dst.Time = ts // as before the field is read
		r.set(doc, d.cfg.timePath, d.timeAt, res, scanned)
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
// value, which Decode must have accepted. Without either, the score is 0.
// Errors are *RecordError with stage "score".
func (d *Decoder) Score(value []byte, dst *Decoded) error {
	return d.score(value, dst, nil, false)
}

// score is Score with the results of decode's scan, when scanned.
func (d *Decoder) score(value []byte, dst *Decoded, res []span, scanned bool) error {
	var v float64
	switch {
	case d.expr != nil:
		var ee exprEvalError
		if scanned {
			var vals [maxExprFields]jval
			for i, at := range d.exprAt {
				vals[i] = field(stringOf(value), d.expr.fields[i], at, res, true)
			}
			v, ee = d.expr.evalResults(vals[:len(d.exprAt)])
		} else {
			v, ee = d.expr.eval(stringOf(value))
		}
		if ee.reason != "" {
			return recErr(StageScore, ee.reason, ee.field, "")
		}
	case d.cfg.scorePath != "":
		r := field(stringOf(value), d.cfg.scorePath, d.scoreAt, res, scanned)
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

// check validates the shape of a value and returns "" when it is a JSON
// object within the size and depth limits.
func (d *Decoder) check(value []byte) Reason {
	if isBlank(value) {
		return ReasonEmptyValue
	}
	if len(value) > d.cfg.maxBytes {
		return ReasonTooLarge
	}
	if !utf8.Valid(value) {
		return ReasonInvalidUTF8
	}
	depth, open := scanDepth(value, d.cfg.maxDepth)
	if depth > d.cfg.maxDepth {
		return ReasonTooDeep
	}
	if !gjson.ValidBytes(value) {
		if open {
			return ReasonTruncated
		}
		return ReasonNotJSON
	}
	for _, c := range value {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			if c != '{' {
				return ReasonNotObject
			}
			break
		}
	}
	return ""
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// scanDepth returns the deepest nesting of value, stopping early once it
// exceeds limit, and whether the text ends inside a string or an
// unclosed object or array (the mark of a truncated record).
func scanDepth(value []byte, limit int) (maxDepth int, open bool) {
	depth := 0
	inString := false
	for i := 0; i < len(value); i++ {
		c := value[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
				if maxDepth > limit {
					return maxDepth, true
				}
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return maxDepth, false
			}
		}
	}
	return maxDepth, inString || depth > 0
}
