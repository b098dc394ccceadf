package stats

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/throttler/throttler/flow"
)

// Ledger records (kind 5): the committed counters of one source, written
// by its owner at every commit (Ledger) and folded by readers (View,
// LoadLedgers). See doc.go for the design; this is the byte layout.
//
// Key (the compaction identity of one record of one source's ledger):
//
//	byte 0     kind = 5
//	u16        source, e.g. "events/3"
//	byte       part: 1 snapshot chunk, 2 delta, 3 heartbeat (another
//	           part fails with ErrUnknownVersion: readers skip it)
//	4 bytes    snapshot and delta only: the chunk or delta number,
//	           uint32 big-endian
//	(nothing may follow)
//
// Value, version 1.1 (a nil value is a tombstone: the key is obsolete):
//
//	byte 0     major = 1 (a decoder rejects other majors)
//	byte 1     minor = 1 (1.0 is 1.1 without the budget entries'
//	           conversion fields, below)
//	Seq        uvarint, at least 1: the publication's sequence number
//	At         time (as in encoding.go): the instant of the commit
//	Offset     zig-zag varint, -1 or more: the source's next input offset
//	Chunks     snapshot only: uvarint, the snapshot's chunk count
//	           (the key's chunk number is below it)
//	count      snapshot and delta only: uvarint, then count entries
//	minor > 1: bytes after the known fields are skipped; in 1.0 and 1.1
//	           they are corrupt
//
// Entry:
//
//	type       byte: 1 budget counters, 2 experiment variant counts,
//	           3 budget dropped, 4 experiment dropped
//	length     uvarint, then that many bytes of content:
//	  1: budget str, flags byte (bit 0 Total.Rewards present, bit 1
//	     InPeriod.Rewards present, bit 2 Cut present; a float is present
//	     when its bits are not all zero), Since time, Total.Offered
//	     uvarint, Total.Passed uvarint, [Total.Rewards float64],
//	     Period zig-zag varint, InPeriod.Offered uvarint,
//	     InPeriod.Passed uvarint, [InPeriod.Rewards float64], [Cut float64],
//	     then, since 1.1 and only when one of them is not zero, a second
//	     flags byte (bit 0 Conversion present, bit 1 RewardDelay present),
//	     [Conversion float64], [RewardDelay zig-zag varint nanoseconds]:
//	     the conversion fit of a reward budget, which a 1.0 reader skips
//	     (a later minor that appends fields writes this byte first, zero
//	     when neither is present)
//	  2: layer str, experiment str, then the counts as in a VariantCounts
//	     value (kinds.go)
//	  3: budget str
//	  4: layer str, experiment str
//
// "str" is a uvarint length (1 to MaxNameLen) then the bytes; floats are
// IEEE-754 binary64 little-endian. Within a record, budget entries (types
// 1 and 3) come in strictly increasing name order, and so do experiment
// entries (types 2 and 4) by (layer, experiment): one identity appears at
// most once. In 1.0 and 1.1 an entry's content ends exactly at its length
// and its type is one of the four; a newer minor may append fields to a
// content or add types, which this build skips (as a 1.0 reader skips the
// conversion fields of 1.1).

// LedgerPart says which record of a source's ledger a key names.
type LedgerPart byte

// Parts of a ledger.
const (
	LedgerSnapshot  LedgerPart = 1 // a chunk of the source's newest snapshot
	LedgerDelta     LedgerPart = 2 // a delta of the chain since that snapshot
	LedgerHeartbeat LedgerPart = 3 // the source's heartbeat
)

func (p LedgerPart) String() string {
	switch p {
	case LedgerSnapshot:
		return "snapshot"
	case LedgerDelta:
		return "delta"
	case LedgerHeartbeat:
		return "heartbeat"
	}
	return fmt.Sprintf("part %d", byte(p))
}

// Limits a reader checks in every ledger record: a
// value outside them is corrupt (ErrCorrupt), whoever wrote it, so that no
// restored counter wraps, no sum turns infinite and no sequence runs out.
const (
	// MaxLedgerSeq is the highest sequence number a reader accepts. A
	// writer hands out one per commit: at a thousand commits a second it
	// would take 146 million years to get there.
	MaxLedgerSeq = 1 << 62
	// LedgerSeqReserve is how close to MaxLedgerSeq a restored sequence
	// may be before NewLedger refuses to continue it
	// (ErrSequenceExhausted): only a record no writer made gets there,
	// and a writer continuing it would soon hand out sequences readers
	// reject.
	LedgerSeqReserve = 1 << 32
	// MaxCount is the largest count (offered, passed, variant count) a
	// reader accepts: 2^53, the largest integer a float64 (and a JSON
	// number) holds exactly; 285 years at a million events a second.
	MaxCount = 1 << 53
)

const (
	ledgerMajor, ledgerMinor = 1, 1

	entryBudget            = 1
	entryExperiment        = 2
	entryBudgetDropped     = 3
	entryExperimentDropped = 4

	bodyRewards   = 1 << 0
	bodyInRewards = 1 << 1
	bodyCut       = 1 << 2

	// the second flags byte (1.1)
	bodyConversion  = 1 << 0
	bodyRewardDelay = 1 << 1
)

// ExperimentID names an experiment: its layer and its name.
type ExperimentID struct{ Layer, Experiment string }

// LedgerRecord is one decoded ledger record, or the content of one to
// encode.
type LedgerRecord struct {
	Source string
	Part   LedgerPart
	// Index is the chunk (snapshot) or delta number; 0 for a heartbeat.
	Index uint32
	// Deleted marks a tombstone: only Source, Part and Index are set.
	Deleted bool

	Seq    uint64
	At     time.Time
	Offset int64
	// Chunks is the snapshot's chunk count (snapshot only).
	Chunks uint32

	// Reports are the budget entries: Budget, Since, Total, Period,
	// InPeriod and Cut (Source and At are the record's once decoded).
	Reports []flow.Report
	// Variants are the experiment entries (Source and At are the
	// record's once decoded).
	Variants []VariantCounts
	// DroppedBudgets and DroppedExperiments leave the ledger.
	DroppedBudgets     []string
	DroppedExperiments []ExperimentID
}

// LedgerKey returns the stats-topic key of one record of source's ledger.
// index must be 0 for a heartbeat.
func LedgerKey(source string, part LedgerPart, index uint32) ([]byte, error) {
	if source == "" || len(source) > MaxNameLen {
		return nil, &ReportError{Source: source, Msg: "ledger source name empty or longer than MaxNameLen"}
	}
	b := make([]byte, 0, 8+len(source))
	b = append(b, byte(KindLedger))
	b = binary.BigEndian.AppendUint16(b, uint16(len(source)))
	b = append(b, source...)
	b = append(b, byte(part))
	switch part {
	case LedgerSnapshot, LedgerDelta:
		b = binary.BigEndian.AppendUint32(b, index)
	case LedgerHeartbeat:
		if index != 0 {
			return nil, &ReportError{Source: source, Msg: "heartbeat key with an index"}
		}
	default:
		return nil, &ReportError{Source: source, Msg: fmt.Sprintf("unknown ledger part %d", part)}
	}
	return b, nil
}

// parseLedgerKey parses a ledger key; source aliases key.
func parseLedgerKey(key []byte) (source []byte, part LedgerPart, index uint32, err error) {
	d := decoder{what: "key", b: key}
	if k := d.byte(); d.err == nil && Kind(k) != KindLedger {
		return nil, 0, 0, d.fail(0, ErrUnknownVersion, "key kind %d, want %d", k, KindLedger)
	}
	if d.rest() < 2 {
		return nil, 0, 0, d.fail(d.pos, ErrCorrupt, "truncated source length")
	}
	n := int(binary.BigEndian.Uint16(d.b[d.pos:]))
	if n == 0 {
		return nil, 0, 0, d.fail(d.pos, ErrCorrupt, "empty source")
	}
	d.pos += 2
	source = d.bytes(n)
	at := d.pos
	part = LedgerPart(d.byte())
	switch {
	case d.err != nil:
	case part == LedgerSnapshot || part == LedgerDelta:
		if b := d.bytes(4); b != nil {
			index = binary.BigEndian.Uint32(b)
		}
	case part != LedgerHeartbeat:
		d.fail(at, ErrUnknownVersion, "unknown ledger part %d", part)
	}
	d.end()
	return source, part, index, d.err
}

// entryBody is the counters of a budget entry: a flow.Report without its
// names and instant.
type entryBody struct {
	since    time.Time
	total    flow.Counters
	period   int64
	inPeriod flow.Counters
	cut      float64
	conv     float64 // Report.Conversion
	delay    int64   // Report.RewardDelay
}

func bodyOf(r flow.Report) entryBody {
	return entryBody{since: r.Since, total: r.Total, period: r.Period, inPeriod: r.InPeriod, cut: r.Cut,
		conv: r.Conversion, delay: int64(r.RewardDelay)}
}

func (b *entryBody) report(budget, source string, at time.Time) flow.Report {
	return flow.Report{Budget: budget, Source: source, At: at, Since: b.since, Total: b.total,
		Period: b.period, InPeriod: b.inPeriod, Cut: b.cut, Conversion: b.conv, RewardDelay: time.Duration(b.delay)}
}

func sameCounters(a, b flow.Counters) bool {
	return a.Offered == b.Offered && a.Passed == b.Passed && math.Float64bits(a.Rewards) == math.Float64bits(b.Rewards)
}

// equal compares instants with Equal and floats bit for bit.
func (b *entryBody) equal(o *entryBody) bool {
	return b.since.Equal(o.since) && sameCounters(b.total, o.total) && b.period == o.period &&
		sameCounters(b.inPeriod, o.inPeriod) && math.Float64bits(b.cut) == math.Float64bits(o.cut) &&
		math.Float64bits(b.conv) == math.Float64bits(o.conv) && b.delay == o.delay
}

// zero reports whether the entry counts nothing: readers keep no such
// entry, and a ledger writes none that it does not already hold.
func (b *entryBody) zero() bool {
	var z flow.Counters
	return sameCounters(b.total, z) && sameCounters(b.inPeriod, z)
}

func appendBudgetContent(b []byte, name string, e *entryBody) []byte {
	b = appendStr(b, name)
	var flags byte
	if math.Float64bits(e.total.Rewards) != 0 {
		flags |= bodyRewards
	}
	if math.Float64bits(e.inPeriod.Rewards) != 0 {
		flags |= bodyInRewards
	}
	if math.Float64bits(e.cut) != 0 {
		flags |= bodyCut
	}
	b = append(b, flags)
	b = appendTime(b, e.since)
	b = binary.AppendUvarint(b, e.total.Offered)
	b = binary.AppendUvarint(b, e.total.Passed)
	if flags&bodyRewards != 0 {
		b = appendFloat(b, e.total.Rewards)
	}
	b = binary.AppendVarint(b, e.period)
	b = binary.AppendUvarint(b, e.inPeriod.Offered)
	b = binary.AppendUvarint(b, e.inPeriod.Passed)
	if flags&bodyInRewards != 0 {
		b = appendFloat(b, e.inPeriod.Rewards)
	}
	if flags&bodyCut != 0 {
		b = appendFloat(b, e.cut)
	}
	var conv byte
	if math.Float64bits(e.conv) != 0 {
		conv |= bodyConversion
	}
	if e.delay != 0 {
		conv |= bodyRewardDelay
	}
	if conv == 0 {
		return b // as in 1.0
	}
	b = append(b, conv)
	if conv&bodyConversion != 0 {
		b = appendFloat(b, e.conv)
	}
	if conv&bodyRewardDelay != 0 {
		b = binary.AppendVarint(b, e.delay)
	}
	return b
}

// budgetContent reads the content of a budget entry (after the name): the
// fields of the given minor version; newer is set when the value is of a
// later minor (its flags may have bits this build does not know).
func (d *decoder) budgetContent(minor byte, newer bool) entryBody {
	var e entryBody
	start := d.pos
	at := d.pos
	flags := d.byte()
	if d.err == nil && flags&^(bodyRewards|bodyInRewards|bodyCut) != 0 {
		d.fail(at, ErrCorrupt, "unknown entry flags %#x", flags)
	}
	opt := func(bit byte) float64 {
		if flags&bit == 0 {
			return 0
		}
		return d.float64()
	}
	e.since = d.time()
	e.total.Offered, e.total.Passed = d.uvarint(), d.uvarint()
	e.total.Rewards = opt(bodyRewards)
	e.period = d.varint()
	e.inPeriod.Offered, e.inPeriod.Passed = d.uvarint(), d.uvarint()
	e.inPeriod.Rewards = opt(bodyInRewards)
	e.cut = opt(bodyCut)
	if minor < 1 || d.rest() == 0 || d.err != nil {
		d.checkBody(start, &e)
		return e
	}
	at = d.pos
	conv := d.byte()
	if d.err == nil && !newer && conv&^(bodyConversion|bodyRewardDelay) != 0 {
		d.fail(at, ErrCorrupt, "unknown conversion flags %#x", conv)
	}
	if conv&bodyConversion != 0 {
		e.conv = d.float64()
	}
	if conv&bodyRewardDelay != 0 {
		e.delay = d.varint()
	}
	d.checkBody(start, &e)
	return e
}

// appendEntry appends an entry of type typ whose content is content.
func appendEntry(b []byte, typ byte, content []byte) []byte {
	b = append(b, typ)
	b = binary.AppendUvarint(b, uint64(len(content)))
	return append(b, content...)
}

// rawEntry is a decoded entry; its names alias the record's bytes.
type rawEntry struct {
	typ    byte
	name   []byte // budget, or layer
	name2  []byte // experiment
	body   entryBody
	counts []VariantCount
}

// ledgerHeader is the header of a ledger value.
type ledgerHeader struct {
	seq    uint64
	at     time.Time
	offset int64
	chunks uint32
}

// decodeLedgerValue parses the value of a ledger record of part (and
// chunk index), appending its entries to ents. On error ents is returned
// as it was given.
func decodeLedgerValue(part LedgerPart, index uint32, value []byte, ents []rawEntry) (ledgerHeader, []rawEntry, error) {
	return decodeLedgerAs(ledgerMinor, part, index, value, ents)
}

// decodeLedgerAs is decodeLedgerValue by a reader that knows the minor
// versions up to known (the tests read as a 1.0 reader does).
func decodeLedgerAs(known byte, part LedgerPart, index uint32, value []byte, ents []rawEntry) (ledgerHeader, []rawEntry, error) {
	d := decoder{what: "ledger " + part.String(), b: value}
	minor := d.version(ledgerMajor)
	var h ledgerHeader
	at := d.pos
	if h.seq = d.uvarint(); d.err == nil && (h.seq == 0 || h.seq > MaxLedgerSeq) {
		d.fail(at, ErrCorrupt, "sequence %d outside [1, 2^62]", h.seq)
	}
	h.at = d.time()
	at = d.pos
	if h.offset = d.varint(); d.err == nil && h.offset < -1 {
		d.fail(at, ErrCorrupt, "offset %d", h.offset)
	}
	if part == LedgerSnapshot {
		at = d.pos
		n := d.uvarint()
		if d.err == nil && (n == 0 || n > math.MaxUint32 || uint64(index) >= n) {
			d.fail(at, ErrCorrupt, "chunk %d of %d", index, n)
		}
		h.chunks = uint32(n)
	}
	start := len(ents)
	if part != LedgerHeartbeat {
		ents = d.entries(minor, known, ents)
	}
	if minor <= known {
		d.end()
	}
	if d.err != nil {
		clear(ents[start:])
		return ledgerHeader{}, ents[:start], d.err
	}
	return h, ents, nil
}

// entries reads a count and the entries that follow, of a value of the
// given minor version by a reader that knows the minors up to known.
func (d *decoder) entries(minor, known byte, ents []rawEntry) []rawEntry {
	at := d.pos
	n := d.uvarint()
	if d.err == nil && n > uint64(d.rest()/2) { // an entry takes at least 2 bytes
		d.fail(at, ErrCorrupt, "%d entries cannot fit in %d bytes", n, d.rest())
	}
	var lastBudget, lastLayer, lastExp []byte
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.pos
		typ := d.byte()
		sub, ok := d.frame("entry")
		if !ok {
			break
		}
		e := rawEntry{typ: typ}
		switch typ {
		case entryBudget, entryBudgetDropped:
			e.name = sub.nameBytes("budget")
			if typ == entryBudget {
				e.body = sub.budgetContent(min(minor, known), minor > known)
			}
			if sub.err == nil && lastBudget != nil && bytes.Compare(e.name, lastBudget) <= 0 {
				sub.fail(at, ErrCorrupt, "budget %q out of order or repeated", e.name)
			}
			lastBudget = e.name
		case entryExperiment, entryExperimentDropped:
			e.name, e.name2 = sub.nameBytes("layer"), sub.nameBytes("experiment")
			if typ == entryExperiment {
				e.counts = sub.counts()
			}
			if c := bytes.Compare(e.name, lastLayer); sub.err == nil && lastLayer != nil && (c < 0 || c == 0 && bytes.Compare(e.name2, lastExp) <= 0) {
				sub.fail(at, ErrCorrupt, "experiment %q/%q out of order or repeated", e.name, e.name2)
			}
			lastLayer, lastExp = e.name, e.name2
		default:
			if minor <= known {
				d.fail(at, ErrCorrupt, "unknown entry type %d", typ)
			}
			continue // a newer minor's entry type
		}
		if minor <= known {
			sub.end()
		}
		if sub.err != nil {
			d.err = sub.err
			break
		}
		ents = append(ents, e)
	}
	return ents
}

// nameBytes is nameVar without the copy: the name aliases d.b.
func (d *decoder) nameBytes(field string) []byte {
	at := d.pos
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n == 0 || n > MaxNameLen {
		d.fail(at, ErrCorrupt, "%s length %d out of range", field, n)
		return nil
	}
	return d.bytes(int(n))
}
