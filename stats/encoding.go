package stats

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/throttler/throttler/flow"
)

// Record layout of the stats topic.
//
// Key, version 1 (compaction identity of one budget x source):
//
//	byte 0        key version = 1
//	bytes 1-2     budget length n, uint16 big-endian, 1 <= n <= MaxNameLen
//	n bytes       budget
//	2 bytes       source length m, uint16 big-endian, 1 <= m <= MaxNameLen
//	m bytes       source
//	(nothing may follow)
//
// Both names are length-prefixed, so any bytes are allowed in them and the
// encoding is canonical: one (budget, source) pair has exactly one key, which
// is what compaction needs.
//
// Value, version 1.1 (the counters; budget and source live in the key):
//
//	byte 0        major version = 1 (a decoder rejects other majors)
//	byte 1        minor version = 1
//	report body:
//	  At           seconds since the Unix epoch, zig-zag varint;
//	               then nanoseconds 0..999999999, uvarint
//	  Since        same as At
//	  Total        Offered uvarint, Passed uvarint,
//	               Rewards 8 bytes IEEE-754 binary64 little-endian
//	  Period       zig-zag varint
//	  InPeriod     same as Total
//	Cut            (since 1.1) the score cut, 8 bytes IEEE-754 binary64
//	               little-endian; a 1.0 value decodes with Cut = NaN
//	minor > 1:     further fields appended after Cut, ignored here
//
// A 1.0 or 1.1 value with trailing bytes is corrupt; a 1.x value (x > 1)
// may carry fields this build does not know, which it skips. A field that changes the
// meaning of the known ones needs a new major version. A nil value is a
// tombstone: the key's source is gone.
//
// Times round-trip exactly (any time.Time, including the zero value),
// decoded in UTC and without a monotonic reading.

const (
	keyVersion   = 1
	valueMajor   = 1
	valueMinor   = 1
	nanosPerSec  = 1_000_000_000
	rewardsBytes = 8
)

// MaxNameLen is the longest budget or source name, in bytes, that a key can
// hold.
const MaxNameLen = math.MaxUint16

// EncodeKey returns the stats-topic key of one budget x source.
// It fails (ErrInvalidReport) for an empty name or one longer than
// MaxNameLen.
func EncodeKey(budget, source string) ([]byte, error) {
	if err := checkNames(budget, source); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 5+len(budget)+len(source))
	b = append(b, keyVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(budget)))
	b = append(b, budget...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(source)))
	b = append(b, source...)
	return b, nil
}

// DecodeKey parses a key written by EncodeKey.
func DecodeKey(key []byte) (budget, source string, err error) {
	d := decoder{what: "key", b: key}
	if v := d.byte(); d.err == nil && v != keyVersion {
		return "", "", d.fail(0, ErrUnknownVersion, "key version %d", v)
	}
	budget = d.name16("budget")
	source = d.name16("source")
	d.end()
	if d.err != nil {
		return "", "", d.err
	}
	return budget, source, nil
}

// EncodeValue returns the stats-topic value of a report: the counters and
// instants, without the budget and source (they are in the key).
func EncodeValue(r flow.Report) []byte {
	b := make([]byte, 0, 64)
	b = append(b, valueMajor, valueMinor)
	b = appendBody(b, r)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Cut))
}

// DecodeValue parses a value written by EncodeValue (or by a newer minor
// version). The returned report has an empty Budget and Source. A nil value
// is a tombstone, not a report: DecodeValue rejects it as corrupt; use
// DecodeReport to tell the two apart.
func DecodeValue(value []byte) (flow.Report, error) {
	d := decoder{what: "value", b: value}
	if value == nil {
		return flow.Report{}, d.fail(0, ErrCorrupt, "nil value (tombstone)")
	}
	minor := d.version(valueMajor)
	var r flow.Report
	d.body(&r)
	r.Cut = math.NaN()
	if minor >= 1 {
		r.Cut = d.float64()
	}
	if minor <= valueMinor {
		d.end()
	}
	if d.err != nil {
		return flow.Report{}, d.err
	}
	return r, nil
}

// EncodeReport returns the key and value of a report's stats record.
func EncodeReport(r flow.Report) (key, value []byte, err error) {
	key, err = EncodeKey(r.Budget, r.Source)
	if err != nil {
		return nil, nil, err
	}
	return key, EncodeValue(r), nil
}

// DecodeReport parses a stats record. For a tombstone (nil value) it returns
// the report with only Budget and Source set and deleted true.
func DecodeReport(key, value []byte) (r flow.Report, deleted bool, err error) {
	budget, source, err := DecodeKey(key)
	if err != nil {
		return flow.Report{}, false, err
	}
	if value == nil {
		return flow.Report{Budget: budget, Source: source}, true, nil
	}
	r, err = DecodeValue(value)
	if err != nil {
		return flow.Report{}, false, err
	}
	r.Budget, r.Source = budget, source
	return r, false, nil
}

func checkNames(budget, source string) error {
	switch {
	case budget == "":
		return &ReportError{Budget: budget, Source: source, Msg: "empty budget name"}
	case source == "":
		return &ReportError{Budget: budget, Source: source, Msg: "empty source name"}
	case len(budget) > MaxNameLen:
		return &ReportError{Budget: budget[:32] + "...", Source: source, Msg: "budget name longer than MaxNameLen"}
	case len(source) > MaxNameLen:
		return &ReportError{Budget: budget, Source: source[:32] + "...", Msg: "source name longer than MaxNameLen"}
	}
	return nil
}

// appendBody appends the report body shared by stats values and checkpoint
// entries.
func appendBody(b []byte, r flow.Report) []byte {
	b = appendTime(b, r.At)
	b = appendTime(b, r.Since)
	b = appendCounters(b, r.Total)
	b = binary.AppendVarint(b, r.Period)
	return appendCounters(b, r.InPeriod)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendCounters(b []byte, c flow.Counters) []byte {
	b = binary.AppendUvarint(b, c.Offered)
	b = binary.AppendUvarint(b, c.Passed)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Rewards))
}
