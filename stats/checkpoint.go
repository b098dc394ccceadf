package stats

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// Checkpoints.
//
// The consumer writes, in the same Kafka transaction as its outputs and its
// input offsets, one record per input partition it processed to the
// (compacted) checkpoint topic:
//
//	key       the source name, SourceName(topic, partition), e.g. "events/3"
//	value     EncodeCheckpoint: the input offset and the cumulative report
//	          of every budget of that source at that commit
//	partition the input partition's number: events/3 goes to checkpoint
//	          partition 3 (produce it with Partitioner, which honours
//	          Record.Partition for the checkpoint topic)
//
// The checkpoint topic therefore needs at least as many partitions as the
// largest input topic (CheckpointTopic); several input topics may share it,
// their sources are told apart by key. A worker that is assigned a partition
// calls LoadCheckpoint and continues from exactly the committed counters.
//
// Value, version 1.0:
//
//	byte 0      major version = 1 (a decoder rejects other majors)
//	byte 1      minor version = 0
//	Offset      zig-zag varint: the next input offset of the source, -1 if unknown
//	count       uvarint: number of entries
//	entries, in strictly increasing budget order:
//	  budget    uvarint length (1..MaxNameLen), then the name
//	  body      uvarint length, then the report body of a stats value
//	            (At, Since, Total, Period, InPeriod; see encoding.go)
//	minor > 0:  bytes after the known fields of a body, and after the last
//	            entry, are skipped; in 1.0 they are corrupt.
//
// Value, version 1.1: as 1.0, then sections until the end of the value,
// each
//
//	tag       uvarint
//	length    uvarint, then that many bytes
//
// Known tags (a decoder skips a section whose tag it does not know, so a
// later feature adds a tag, not a version):
//
//	1  variant counts (Checkpoint.Variants): uvarint count, then per
//	   experiment, in strictly increasing (layer, experiment) order:
//	   layer and experiment (uvarint length 1..MaxNameLen, then the name),
//	   then the counts as in a VariantCounts value (kinds.go)
//
// A 1.1 value whose sections do not end exactly at the end of the value
// is corrupt; in a newer minor, bytes that do not parse as sections are
// skipped (with the sections they spoil). EncodeCheckpoint writes 1.0 when there is no section, so a
// checkpoint without variant counts keeps its 1.0 bytes. A 1.0 reader
// skips the sections (they follow the last entry).

const (
	checkpointMajor = 1
	checkpointMinor = 1

	sectionVariants = 1
)

// Checkpoint is the committed state of one source: the input offset it was
// taken at and the cumulative report of every budget.
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
type Checkpoint struct {
	// Source is the source name, SourceName(topic, partition).
	Source string
	// Offset is the next input offset of Source to process: the offset
	// committed in the same transaction. -1 when unknown.
	Offset int64
	// Reports holds one report per budget, sorted by budget once decoded.
	// Their Source is Source (or empty when encoding, meaning Source).
	Reports []flow.Report
	// Variants holds the source's cumulative variant counts per
	// experiment (their Source and At are not stored), sorted by layer and
	// experiment once decoded.
	Variants []VariantCounts
}

// Report returns the report of budget, if the checkpoint has one. Its
// signature fits a "restore" callback: func(budget string) (flow.Report, bool).
func (c Checkpoint) Report(budget string) (flow.Report, bool) {
	for _, r := range c.Reports {
		if r.Budget == budget {
			return r, true
		}
	}
	return flow.Report{}, false
}

// EncodeCheckpoint returns the checkpoint-topic value of c. It fails
// (ErrInvalidReport) for an empty or overlong name, a report of another
// source, or a budget listed twice.
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
func EncodeCheckpoint(c Checkpoint) ([]byte, error) {
	if c.Source == "" || len(c.Source) > MaxNameLen {
		return nil, &ReportError{Source: c.Source, Msg: "checkpoint source name empty or longer than MaxNameLen"}
	}
	reports := slices.Clone(c.Reports)
	for i := range reports {
		r := &reports[i]
		if r.Source == "" {
			r.Source = c.Source
		}
		if r.Source != c.Source {
			return nil, &ReportError{Budget: r.Budget, Source: r.Source, Msg: fmt.Sprintf("checkpoint of source %q holds another source", c.Source)}
		}
		if err := checkNames(r.Budget, r.Source); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(reports, func(a, b flow.Report) int { return strings.Compare(a.Budget, b.Budget) })
	for i := 1; i < len(reports); i++ {
		if reports[i].Budget == reports[i-1].Budget {
			return nil, &ReportError{Budget: reports[i].Budget, Source: c.Source, Msg: "budget listed twice in a checkpoint"}
		}
	}

	var sections []byte
	if len(c.Variants) > 0 {
		sec, err := appendVariantSection(nil, c.Source, c.Variants)
		if err != nil {
			return nil, err
		}
		sections = binary.AppendUvarint(sections, sectionVariants)
		sections = binary.AppendUvarint(sections, uint64(len(sec)))
		sections = append(sections, sec...)
	}
	minor := byte(0)
	if len(sections) > 0 {
		minor = 1
	}
	b := make([]byte, 0, 16+len(reports)*64+len(sections))
	b = append(b, checkpointMajor, minor)
	b = binary.AppendVarint(b, c.Offset)
	b = binary.AppendUvarint(b, uint64(len(reports)))
	var body []byte
	for _, r := range reports {
		b = binary.AppendUvarint(b, uint64(len(r.Budget)))
		b = append(b, r.Budget...)
		body = appendBody(body[:0], r)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	return append(b, sections...), nil
}

// appendVariantSection appends the body of a variant counts section.
func appendVariantSection(b []byte, source string, vs []VariantCounts) ([]byte, error) {
	vs = slices.Clone(vs)
	cmp := func(a, b VariantCounts) int {
		if c := strings.Compare(a.Layer, b.Layer); c != 0 {
			return c
		}
		return strings.Compare(a.Experiment, b.Experiment)
	}
	slices.SortFunc(vs, cmp)
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for i, v := range vs {
		if v.Layer == "" || v.Experiment == "" || len(v.Layer) > MaxNameLen || len(v.Experiment) > MaxNameLen || (i > 0 && cmp(v, vs[i-1]) == 0) {
			return nil, &ReportError{Budget: v.Layer + "/" + v.Experiment, Source: source, Msg: "experiment name empty, overlong or listed twice in a checkpoint"}
		}
		b = appendStr(b, v.Layer)
		b = appendStr(b, v.Experiment)
		var err error
		if b, err = appendCounts(b, v.Layer+"/"+v.Experiment, source, v.Counts); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// sections reads the sections of a 1.1 checkpoint into c.
func (d *decoder) sections(c *Checkpoint) {
	for d.err == nil && d.rest() > 0 {
		tag := d.uvarint()
		sub, ok := d.frame("section")
		if !ok {
			return
		}
		if tag != sectionVariants {
			continue // a later feature's section
		}
		n := sub.uvarint()
		for i := uint64(0); i < n && sub.err == nil; i++ {
			at := sub.pos
			v := VariantCounts{Layer: sub.nameVar("layer"), Experiment: sub.nameVar("experiment"), Source: c.Source}
			v.Counts = sub.counts()
			if sub.err == nil && len(c.Variants) > 0 {
				last := c.Variants[len(c.Variants)-1]
				if v.Layer < last.Layer || (v.Layer == last.Layer && v.Experiment <= last.Experiment) {
					sub.fail(at, ErrCorrupt, "experiment %s/%s out of order or repeated", v.Layer, v.Experiment)
				}
			}
			c.Variants = append(c.Variants, v)
		}
		sub.end()
		if sub.err != nil {
			d.err = sub.err
			c.Variants = nil
			return
		}
	}
}

// DecodeCheckpoint parses a checkpoint value of source. The reports come
// back sorted by budget, with Budget and Source set.
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
func DecodeCheckpoint(source string, value []byte) (Checkpoint, error) {
	d := decoder{what: "checkpoint", b: value}
	minor := d.version(checkpointMajor)
	c := Checkpoint{Source: source, Offset: d.varint()}
	at := d.pos
	n := d.uvarint()
	if d.err == nil && n > uint64(d.rest()/4) { // an entry takes at least 4 bytes
		d.fail(at, ErrCorrupt, "%d entries cannot fit in %d bytes", n, d.rest())
	}
	if d.err == nil && n > 0 {
		c.Reports = make([]flow.Report, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.pos
		r := flow.Report{Budget: d.nameVar("budget"), Source: source}
		if d.err == nil && len(c.Reports) > 0 && r.Budget <= c.Reports[len(c.Reports)-1].Budget {
			d.fail(at, ErrCorrupt, "budget %q out of order or repeated", r.Budget)
		}
		sub, ok := d.frame("body")
		if !ok {
			break
		}
		sub.body(&r)
		if minor == 0 {
			sub.end()
		}
		if sub.err != nil {
			d.err = sub.err
			break
		}
		c.Reports = append(c.Reports, r)
	}
	switch {
	case minor == 0:
		d.end()
	case d.err == nil && minor == 1:
		d.sections(&c)
	case d.err == nil:
		// A newer minor: its sections as far as they parse; bytes this
		// build cannot read are skipped, as the 1.0 rule says.
		sub := d
		sub.sections(&c)
		if sub.err != nil {
			c.Variants = nil
		}
	}
	if d.err != nil {
		return Checkpoint{}, d.err
	}
	return c, nil
}

// CheckpointRecord returns the record that stores c in partition of the
// checkpoint topic (by convention the partition number of the input
// partition c.Source names). Produce it with a client whose partitioner
// honours Record.Partition for topic (see Partitioner), inside the
// transaction that commits the input offsets.
//
// Deprecated: the ledger of each source on the stats topic (Ledger,
// LoadLedgers) replaces the checkpoint topic; this goes once the consumer
// has switched to it.
func CheckpointRecord(topic string, partition int32, c Checkpoint) (*kgo.Record, error) {
	if topic == "" || partition < 0 {
		return nil, errInvalidConfig("checkpoint topic %q partition %d", topic, partition)
	}
	v, err := EncodeCheckpoint(c)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: topic, Partition: partition, Key: []byte(c.Source), Value: v}, nil
}
