package stats

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/throttler/throttler/flow"
)

// Record kinds of the stats topic.
//
// The first byte of every stats key says what the record holds:
//
//	kind 2  budget definition, one per budget
//	        key:   2, u16 budget
//	        value: BudgetDef (major 1, minor 1)
//	kind 4  experiment definition, one per layer x experiment
//	        key:   4, u16 layer, u16 experiment
//	        value: ExperimentDef (major 1, minor 0)
//	kind 5  one record of a source's ledger (ledger_encoding.go)
//	kind 6  a worker's status, for operators (workerstatus.go)
//
// Kinds 1 and 3 are reserved: no build of this module writes them, and a
// reader skips them as kinds it does not know (see CHANGELOG.md). u16,
// time, float64 and str are the encodings of encoding.go. Keys are
// canonical (one identity, one key) and nothing may follow the last name.
//
// A reader that meets a kind it does not know (a newer build's) fails to
// decode it with ErrUnknownVersion ("key version N"); a View counts such
// records as Skipped and carries on.
//
// Value layouts:
//
//	BudgetDef 1.0:     At (time published), Target float64, Begin time,
//	                   End time, Reserve zig-zag varint ns, Period zig-zag
//	                   varint ns, flags byte (bit 0 rewards, bit 1 scored,
//	                   bit 2 delay; other bits must be 0), Parent str,
//	                   Origin str
//	BudgetDef 1.1:     1.0, then Conversion float64, RewardDelay zig-zag
//	                   varint ns (a reward budget's prior; zero when
//	                   none), which a 1.0 reader skips
//	variant counts:    count uvarint, then count x (variant str non-empty,
//	                   strictly increasing; events uvarint; keys uvarint),
//	                   inside a ledger's experiment entry
//	ExperimentDef 1.0: At time, count uvarint (at least 1), then count x
//	                   (variant str non-empty, strictly increasing;
//	                   weight float64 positive and finite; topic str;
//	                   limit str: the budget name of the variant's limit,
//	                   empty for none; fallback str: "output", "rejected"
//	                   or empty)

// Kind says what a stats record holds: the first byte of its key.
type Kind byte

// Record kinds.
const (
	KindBudget     Kind = 2 // a budget's definition (BudgetDef)
	KindExperiment Kind = 4 // an experiment's variants and weights (ExperimentDef)
	KindLedger     Kind = 5 // one record of a source's ledger (LedgerRecord, ledger_encoding.go)
)

var kindNames = map[Kind]string{KindBudget: "budget definition", KindExperiment: "experiment definition", KindLedger: "ledger", KindWorker: "worker status"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind %d", byte(k))
}

const (
	defMajor, defMinor = 1, 0
	budgetDefMinor     = 1 // BudgetDef's minor: 1.1 carries the reward prior
	flagRewards        = 1 << 0
	flagScored         = 1 << 1
	flagDelay          = 1 << 2
)

// BudgetDef is a budget's definition as a worker runs it: what status
// needs to compute the ideal course of the budget without the worker's
// configuration.
type BudgetDef struct {
	// Budget is the definition; Budget.Name is the record's identity.
	Budget flow.Budget
	// At is when it was published.
	At time.Time
	// Origin says who published it (a worker's id), for operators; may be
	// empty.
	Origin string
}

// VariantCount is the count of one variant.
type VariantCount struct {
	Variant string
	// Count is the number of events.
	Count uint64
	// Keys is the number of keys counted at their first event since the
	// source's owner opened it (see the consumer): a count of units, not of
	// events, for a sample-ratio test that heavy keys do not upset.
	Keys uint64
}

// VariantCounts are the cumulative counts of the events one source (input
// partition) routed to each variant of one experiment: events that passed
// their budget and were assigned to the variant, whether a variant limit
// then sent them elsewhere or not (the assignment is what an SRM check
// tests). A source's ledger carries them (Changes.Variants,
// LedgerState.Variants); Counts is sorted by variant once decoded.
type VariantCounts struct {
	Layer, Experiment, Source string
	At                        time.Time
	Counts                    []VariantCount
}

// VariantDef is one variant of an ExperimentDef.
type VariantDef struct {
	Name   string
	Weight float64 // the variant's share of the experiment, as split (need not sum to 1)
	Topic  string
	// Limit is the budget name of the variant's limit, "" for none.
	Limit string
	// Fallback is where events over the limit go: "output" or
	// "rejected"; "" when there is no limit.
	Fallback string
}

// ExperimentDef is an experiment's variants as the splitter splits them.
// Variants is sorted by name once decoded.
type ExperimentDef struct {
	Layer, Experiment string
	At                time.Time
	Variants          []VariantDef
}

// Record is one decoded stats record of any kind; the field of its Kind
// is set (Budget, Experiment, Ledger or Worker). A tombstone has Deleted
// set and only the identity fields of its kind.
type Record struct {
	Kind       Kind
	Deleted    bool
	Budget     BudgetDef
	Experiment ExperimentDef
	Ledger     LedgerRecord
	Worker     WorkerStatus
}

// DecodeRecord parses a stats record of any kind this build knows. A key of
// another kind fails with ErrUnknownVersion.
func DecodeRecord(key, value []byte) (Record, error) {
	if len(key) == 0 {
		return Record{}, &DecodeError{What: "key", Err: ErrCorrupt, Msg: "empty"}
	}
	rec := Record{Kind: Kind(key[0]), Deleted: value == nil}
	var err error
	switch rec.Kind {
	case KindBudget:
		err = decodeBudgetRecord(key, value, &rec.Budget)
	case KindExperiment:
		d := decoder{what: "key", b: key, pos: 1}
		e := &rec.Experiment
		e.Layer, e.Experiment = d.name16("layer"), d.name16("experiment")
		d.end()
		if err = d.err; err == nil && value != nil {
			err = decodeExperimentDef(value, e)
		}
	case KindLedger:
		rec.Ledger, err = DecodeLedger(key, value)
	case KindWorker:
		err = decodeWorker(key, value, &rec.Worker)
	default:
		err = &DecodeError{What: "key", Err: ErrUnknownVersion, Msg: fmt.Sprintf("key version %d: a record kind this build does not know", key[0])}
	}
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// validKeyName reports whether s can be a name in a key: not empty, at most
// MaxNameLen bytes.
func validKeyName(s string) bool { return s != "" && len(s) <= MaxNameLen }

// appendKey appends a key of kind k made of names.
func appendKey(k Kind, names ...string) ([]byte, error) {
	n := 1
	for _, s := range names {
		if !validKeyName(s) {
			return nil, &ReportError{Budget: k.String(), Source: names[0], Msg: "empty name, or longer than MaxNameLen"}
		}
		n += 2 + len(s)
	}
	b := make([]byte, 0, n)
	b = append(b, byte(k))
	for _, s := range names {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// BudgetKey returns the stats-topic key of a budget's definition.
func BudgetKey(budget string) ([]byte, error) { return appendKey(KindBudget, budget) }

// ExperimentKey returns the stats-topic key of an experiment's definition.
func ExperimentKey(layer, experiment string) ([]byte, error) {
	return appendKey(KindExperiment, layer, experiment)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// EncodeBudgetDef returns the key and value of a budget definition record.
func EncodeBudgetDef(d BudgetDef) (key, value []byte, err error) {
	bd := d.Budget
	if key, err = BudgetKey(bd.Name); err != nil {
		return nil, nil, err
	}
	if value, err = appendBudgetDef(make([]byte, 0, 64+len(bd.Parent)+len(d.Origin)), d); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// appendBudgetDef appends the value of d's definition record to b.
func appendBudgetDef(b []byte, d BudgetDef) ([]byte, error) {
	bd := d.Budget
	if len(bd.Parent) > MaxNameLen || len(d.Origin) > MaxNameLen {
		return b, &ReportError{Budget: bd.Name, Msg: "parent or origin longer than MaxNameLen"}
	}
	b = append(b, defMajor, budgetDefMinor)
	b = appendTime(b, d.At)
	b = appendFloat(b, bd.Target)
	b = appendTime(b, bd.Begin)
	b = appendTime(b, bd.End)
	b = binary.AppendVarint(b, int64(bd.Reserve))
	b = binary.AppendVarint(b, int64(bd.Period))
	var flags byte
	if bd.Rewards {
		flags |= flagRewards
	}
	if bd.Scored {
		flags |= flagScored
	}
	if bd.Delay {
		flags |= flagDelay
	}
	b = append(b, flags)
	b = appendStr(b, bd.Parent)
	b = appendStr(b, d.Origin)
	b = appendFloat(b, bd.Conversion)
	b = binary.AppendVarint(b, int64(bd.RewardDelay))
	return b, nil
}

// decodeBudgetRecord decodes a budget definition record (key of
// KindBudget) into d; a tombstone (nil value) sets only the name.
func decodeBudgetRecord(key, value []byte, d *BudgetDef) error {
	dec := decoder{what: "key", b: key, pos: 1}
	d.Budget.Name = dec.name16("budget")
	dec.end()
	if dec.err != nil || value == nil {
		return dec.err
	}
	return decodeBudgetDef(value, d)
}

func decodeBudgetDef(value []byte, d *BudgetDef) error {
	if err := decodeBudgetFields(value, d); err != nil {
		return err
	}
	// A definition that breaks flow's rules (a target of 1.7e308, a window
	// that ends before it begins) is no budget any worker runs: readers
	// skip it rather than compute its course.
	if err := flow.CheckBudget(d.Budget); err != nil {
		return &DecodeError{What: "budget definition", Err: ErrCorrupt, Msg: err.Error()}
	}
	return nil
}

// decodeBudgetFields reads a budget definition's fields, unchecked.
func decodeBudgetFields(value []byte, d *BudgetDef) error {
	dec := decoder{what: "budget definition", b: value}
	minor := dec.version(defMajor)
	bd := &d.Budget
	d.At = dec.time()
	bd.Target = dec.float64()
	bd.Begin = dec.time()
	bd.End = dec.time()
	bd.Reserve = time.Duration(dec.varint())
	bd.Period = time.Duration(dec.varint())
	at := dec.pos
	flags := dec.byte()
	if dec.err == nil && flags&^(flagRewards|flagScored|flagDelay) != 0 {
		dec.fail(at, ErrCorrupt, "unknown flags %#x", flags)
	}
	bd.Rewards, bd.Scored, bd.Delay = flags&flagRewards != 0, flags&flagScored != 0, flags&flagDelay != 0
	bd.Parent = dec.str("parent")
	d.Origin = dec.str("origin")
	if minor >= 1 {
		bd.Conversion = dec.float64()
		bd.RewardDelay = time.Duration(dec.varint())
	}
	if minor <= budgetDefMinor {
		dec.end()
	}
	return dec.err
}

// appendCounts appends count, then (variant, n) pairs sorted by variant.
func appendCounts(b []byte, exp, source string, counts []VariantCount) ([]byte, error) {
	cs := slices.Clone(counts)
	slices.SortFunc(cs, func(a, b VariantCount) int { return strings.Compare(a.Variant, b.Variant) })
	for i, c := range cs {
		if c.Variant == "" || len(c.Variant) > MaxNameLen || (i > 0 && c.Variant == cs[i-1].Variant) {
			return nil, &ReportError{Budget: exp, Source: source, Msg: fmt.Sprintf("variant %q empty, overlong or listed twice", c.Variant)}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		b = appendStr(b, c.Variant)
		b = binary.AppendUvarint(b, c.Count)
		b = binary.AppendUvarint(b, c.Keys)
	}
	return b, nil
}

// counts reads what appendCounts wrote.
func (d *decoder) counts() []VariantCount {
	at := d.pos
	n := d.uvarint()
	if d.err == nil && n > uint64(d.rest()/4) { // an entry takes at least 4 bytes
		d.fail(at, ErrCorrupt, "%d variant counts cannot fit in %d bytes", n, d.rest())
	}
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]VariantCount, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.pos
		c := VariantCount{Variant: d.nameVar("variant"), Count: d.uvarint(), Keys: d.uvarint()}
		switch {
		case d.err != nil:
		case len(out) > 0 && c.Variant <= out[len(out)-1].Variant:
			d.fail(at, ErrCorrupt, "variant %q out of order or repeated", c.Variant)
		case c.Count > MaxCount || c.Keys > MaxCount:
			d.fail(at, ErrCorrupt, "variant count above 2^53 (%d events, %d keys)", c.Count, c.Keys)
		}
		out = append(out, c)
	}
	return out
}

// EncodeExperimentDef returns the key and value of an experiment
// definition record. It needs at least one variant, distinct non-empty
// names and positive finite weights; variants are sorted by name.
func EncodeExperimentDef(e ExperimentDef) (key, value []byte, err error) {
	if key, err = ExperimentKey(e.Layer, e.Experiment); err != nil {
		return nil, nil, err
	}
	bad := func(msg string) error {
		return &ReportError{Budget: e.Layer + "/" + e.Experiment, Msg: msg}
	}
	if len(e.Variants) == 0 {
		return nil, nil, bad("experiment definition without variants")
	}
	vs := slices.Clone(e.Variants)
	slices.SortFunc(vs, func(a, b VariantDef) int { return strings.Compare(a.Name, b.Name) })
	b := append(make([]byte, 0, 16+32*len(vs)), defMajor, defMinor)
	b = appendTime(b, e.At)
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for i, v := range vs {
		switch {
		case v.Name == "" || len(v.Name) > MaxNameLen || (i > 0 && v.Name == vs[i-1].Name):
			return nil, nil, bad(fmt.Sprintf("variant %q empty, overlong or listed twice", v.Name))
		case !(v.Weight > 0) || math.IsInf(v.Weight, 0):
			return nil, nil, bad(fmt.Sprintf("variant %q weight %v is not positive and finite", v.Name, v.Weight))
		case len(v.Topic) > MaxNameLen || len(v.Limit) > MaxNameLen || len(v.Fallback) > MaxNameLen:
			return nil, nil, bad(fmt.Sprintf("variant %q topic, limit or fallback longer than MaxNameLen", v.Name))
		}
		b = appendStr(b, v.Name)
		b = appendFloat(b, v.Weight)
		b = appendStr(b, v.Topic)
		b = appendStr(b, v.Limit)
		b = appendStr(b, v.Fallback)
	}
	return key, b, nil
}

func decodeExperimentDef(value []byte, e *ExperimentDef) error {
	d := decoder{what: "experiment definition", b: value}
	minor := d.version(defMajor)
	e.At = d.time()
	at := d.pos
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > uint64(d.rest()/12)) { // a variant takes at least 12 bytes
		d.fail(at, ErrCorrupt, "%d variants cannot fit in %d bytes", n, d.rest())
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.pos
		v := VariantDef{Name: d.nameVar("variant"), Weight: d.float64(), Topic: d.str("topic"), Limit: d.str("limit"), Fallback: d.str("fallback")}
		switch {
		case d.err != nil:
		case len(e.Variants) > 0 && v.Name <= e.Variants[len(e.Variants)-1].Name:
			d.fail(at, ErrCorrupt, "variant %q out of order or repeated", v.Name)
		case !(v.Weight > 0) || math.IsInf(v.Weight, 0):
			d.fail(at, ErrCorrupt, "variant %q weight %v is not positive and finite", v.Name, v.Weight)
		}
		e.Variants = append(e.Variants, v)
	}
	if minor <= defMinor {
		d.end()
	}
	return d.err
}

// str reads a uvarint-length-prefixed string that may be empty, at most
// MaxNameLen bytes.
func (d *decoder) str(field string) string {
	at := d.pos
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > MaxNameLen {
		d.fail(at, ErrCorrupt, "%s length %d out of range", field, n)
		return ""
	}
	return string(d.bytes(int(n)))
}
