package pipeline

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/bytesconv"
)

// Per-key frequency caps.
//
// Every input partition owns one flow.Cap per configured cap: Kafka sends
// all records of a key to one partition, so when the input is keyed by the
// cap's key (see CapSpec) a key's whole history is on one partition and the
// partition goroutine, the single writer of its state, decides exactly.
//
// A cap is applied at the event's time (Decoded.Time: the time field, else
// the record timestamp), so that a replay decides as the first run did and
// the caps can be checked from the output topic alone.
//
// A key longer than MaxStateKeyBytes is kept (and written to the
// changelog) as its digest (StateKey): a cap's memory follows its number
// of keys, not their length.
//
// An event is charged to a cap only if it finally passes: the caps stage
// charges it, lets the later stages decide, and takes the charge back when
// the event ends anything but OutcomePass (rejected by its budget, dead
// lettered, dropped). A cap therefore counts what was delivered, as
// redis-cell counts what it allowed.

// ReasonCap is the RejectReason of an event over a cap; RejectedBy is the
// cap's name.
const ReasonCap = "cap"

// Reasons of records the caps stage dead-letters.
const (
	ReasonMissingCapKey decode.Reason = "missing_cap_key"  // the cap's key field is absent, null or empty
	ReasonCapKeyType    decode.Reason = "cap_key_type"     // the cap's key field is an object, array or bool
	ReasonCapQuantity   decode.Reason = "bad_cap_quantity" // the quantity field is absent, or not a whole number ≥ 0
)

// Headers of an event rejected by a cap, the answer of redis-cell's
// CL.THROTTLE as decimal text: limit and remaining in units of quantity,
// retry-after and reset-after in milliseconds, rounded up (retry-after is
// -1 when the quantity can never fit: it exceeds the limit).
const (
	HeaderCap             = "throttler-cap"
	HeaderCapLimit        = "throttler-cap-limit"
	HeaderCapRemaining    = "throttler-cap-remaining"
	HeaderCapRetryAfterMs = "throttler-cap-retry-after-ms"
	HeaderCapResetAfterMs = "throttler-cap-reset-after-ms"
)

// CapSpec is one per-key frequency cap: every key may take Count per Period
// on average and Burst+1 at once (flow.NewCap(Burst, Count, Period)).
//
// The input must be keyed so that all events of a cap key are on one
// partition: the record key is the cap key, or at least hashes (murmur2,
// Kafka's and kgo's default partitioner) to the record's partition.
// Records that do not are counted in throttler_cap_misrouted_total{cap}
// and logged (at most once a minute per cap); they are still capped, but
// on the wrong partition's state, so their key's cap is not exact.
type CapSpec struct {
	// Name names the cap in metrics, headers and the changelog. Required.
	Name string
	// KeyPath is the JSON path of the capped key. "" means the event key
	// (Decoded.Key: the decoder's KeyPath, else the record key). Read with
	// Decoded.Field: for Avro and Protobuf events the decoder must list it
	// (decode.Paths), as QuantityPath.
	KeyPath string
	// QuantityPath is the JSON path of what an event costs, a whole number
	// at least 0 (0 only asks). "" means 1.
	QuantityPath string
	Burst        int64
	Count        int64
	Period       time.Duration
}

// maxCapQuantity bounds a quantity: integers above it are not exact in a
// float64.
const maxCapQuantity = 1 << 53

// Caps are the per-key caps of a worker: their specs, the changelog topic
// their state is kept in, and what the partitions share. Immutable but for
// the atomics. Stage builds the caps stage from them.
type Caps struct {
	changelog  string
	specs      []CapSpec
	clientOpts []kgo.Opt            // to read the changelog
	misrouted  []prometheus.Counter // by spec
	lastWarn   []atomic.Int64       // by spec: Unix ns of the last misrouting warning
	log        zerolog.Logger
	// load reads a partition's committed state (Caps.load; tests start
	// from a state of their own).
	load func(*Partition) (*partitionCaps, error)
}

// NewCaps checks the specs and returns the caps they make, keeping their
// state in changelog, a compacted topic partitioned like the input, read
// with clientOpts. The misrouting counter is registered in reg.
func NewCaps(changelog string, specs []CapSpec, clientOpts []kgo.Opt, reg prometheus.Registerer, log zerolog.Logger) (*Caps, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if changelog == "" {
		return nil, &ConfigError{Option: "WithCaps", Reason: "no changelog topic"}
	}
	s := &Caps{changelog: changelog, specs: append([]CapSpec(nil), specs...), clientOpts: clientOpts, log: log,
		misrouted: make([]prometheus.Counter, len(specs)), lastWarn: make([]atomic.Int64, len(specs))}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttler_cap_misrouted_total",
		Help: "Events whose cap key does not hash (murmur2) to the partition they were read from: the input is not keyed as the cap expects.",
	}, []string{"cap"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, sp := range specs {
		if sp.Name == "" || seen[sp.Name] {
			return nil, &ConfigError{Option: "WithCaps", Reason: fmt.Sprintf("cap %d: empty or repeated name %q", i, sp.Name)}
		}
		seen[sp.Name] = true
		if _, err := flow.NewCap(sp.Burst, sp.Count, sp.Period); err != nil {
			return nil, &ConfigError{Option: "WithCaps", Reason: "cap " + sp.Name + ": " + err.Error()}
		}
		s.misrouted[i] = vec.WithLabelValues(sp.Name)
	}
	s.load = s.loadChangelog
	return s, nil
}

// Changelog returns the changelog topic, "" for nil caps.
func (s *Caps) Changelog() string {
	if s == nil {
		return ""
	}
	return s.changelog
}

// Stage returns the caps stage: built for a partition, it reads the
// partition's committed cap state from the changelog (retrying a few
// times: a partition must not start with no caps, which would let every
// key pass again), keeps it with the partition's transactions
// (Partition.Keep) and applies the caps to every event. An event over a
// cap is rejected (ReasonCap, RejectedBy the cap's name, with the
// CL.THROTTLE headers); one that passes every cap is charged to them only
// if it ends OutcomePass. Nil caps give a stage that passes events on.
func (s *Caps) Stage() Stage {
	if s == nil {
		return Func(StageCaps, func(next Handler) Handler { return next })
	}
	return Stage{Name: StageCaps, Changelog: s.changelog, New: func(part *Partition) (Middleware, error) {
		pc, err := s.load(part)
		if err != nil {
			return nil, err
		}
		part.Keep(pc)
		return func(next Handler) Handler {
			return func(e *Event) Outcome { return pc.apply(e, next) }
		}, nil
	}}
}

// partitionCaps is one input partition's caps, owned by its goroutine (and
// by the poll loop while the partition is idle, at commits).
type partitionCaps struct {
	set    *Caps
	source string
	id     int32       // the source's partition, and the changelog's
	caps   []*flow.Cap // by spec
	// dirty holds, by spec, the keys changed since the last commit and
	// their committed TAT: what the changelog must be told at the commit,
	// and what an abort restores.
	dirty []map[string]capUndo
	// watermark is the latest event time seen (Unix ns); committedMark its
	// value at the last commit.
	watermark, committedMark int64

	applied   []capApplied // scratch: the charges of the current event
	misrouted []uint64     // by spec, since the last flush
	parts     int          // partitions of the input topic; 0 when unknown
	hasher    kgo.TopicPartitioner
	rec       kgo.Record // scratch for hasher
}

// capUndo is a key's TAT before a change: Unix ns, had false when the key
// was absent.
type capUndo struct {
	tat int64
	had bool
}

// capApplied is one charge of the current event.
type capApplied struct {
	spec int
	key  []byte // valid while the record is
	prev capUndo
}

// newPartitionCaps returns empty caps for source, input partition id of a
// topic with parts partitions (0 when unknown: no keying check).
func (s *Caps) newPartitionCaps(source string, id int32, parts int) *partitionCaps {
	pc := &partitionCaps{set: s, source: source, id: id, parts: parts,
		caps: make([]*flow.Cap, len(s.specs)), dirty: make([]map[string]capUndo, len(s.specs)),
		misrouted: make([]uint64, len(s.specs))}
	for i, sp := range s.specs {
		pc.caps[i], _ = flow.NewCap(sp.Burst, sp.Count, sp.Period) // checked by NewCaps
		pc.dirty[i] = map[string]capUndo{}
	}
	if parts > 0 {
		pc.hasher = kgo.StickyKeyPartitioner(nil).ForTopic("")
	}
	return pc
}

func (pc *partitionCaps) apply(e *Event, next Handler) (o Outcome) {
	t := e.Fields.Time
	if t.IsZero() {
		t = e.Now
	}
	tn := t.UnixNano()
	if tn > pc.watermark {
		pc.watermark = tn
	}
	pc.applied = pc.applied[:0]
	kept := false
	defer func() {
		if !kept {
			pc.undo() // also when a later stage panics
		}
	}()
	for i, sp := range pc.set.specs {
		key, err := pc.key(e, sp)
		if err != nil {
			return e.DeadLetter(err)
		}
		q := int64(1)
		if sp.QuantityPath != "" {
			if q, err = quantity(e, sp); err != nil {
				return e.DeadLetter(err)
			}
		}
		pc.checkKeying(e, i, key)
		key = StateKey(key)
		c := pc.caps[i]
		var prev capUndo
		if tat, ok := c.Lookup(key); ok {
			prev = capUndo{tat.UnixNano(), true}
		}
		res := c.ThrottleNanos(key, tn, q)
		if res.Limited {
			capHeaders(e, sp.Name, c.Limit(), res)
			return e.Reject(sp.Name, ReasonCap)
		}
		if q > 0 {
			pc.applied = append(pc.applied, capApplied{i, key, prev})
		}
	}
	o = next(e)
	if o != OutcomePass {
		return o
	}
	kept = true
	for _, a := range pc.applied {
		d := pc.dirty[a.spec]
		if _, ok := d[bytesconv.String(a.key)]; !ok {
			d[string(a.key)] = a.prev
		}
	}
	return o
}

// undo takes back the charges of the current event.
func (pc *partitionCaps) undo() {
	for i := len(pc.applied) - 1; i >= 0; i-- {
		a := pc.applied[i]
		pc.restore(a.spec, bytesconv.String(a.key), a.prev)
	}
	pc.applied = pc.applied[:0]
}

func (pc *partitionCaps) restore(spec int, key string, u capUndo) {
	if u.had {
		pc.caps[spec].Restore(key, time.Unix(0, u.tat))
	} else {
		pc.caps[spec].Forget(key)
	}
}

// key returns the event's key for a cap.
func (pc *partitionCaps) key(e *Event, sp CapSpec) ([]byte, *decode.RecordError) {
	if sp.KeyPath == "" {
		if e.Fields.Key == "" {
			return nil, recErr(StageCaps, ReasonMissingCapKey, "", "cap "+sp.Name+" needs the event key")
		}
		return bytesconv.Bytes(e.Fields.Key), nil
	}
	r := e.Fields.Field(e.Record.Value, sp.KeyPath)
	var k string
	switch r.Type {
	case gjson.String:
		k = r.Str
	case gjson.Number:
		k = r.Raw
	case gjson.Null:
	default:
		return nil, recErr(StageCaps, ReasonCapKeyType, sp.KeyPath, "cap "+sp.Name+": "+r.Type.String())
	}
	if k == "" {
		return nil, recErr(StageCaps, ReasonMissingCapKey, sp.KeyPath, "cap "+sp.Name)
	}
	return bytesconv.Bytes(k), nil
}

// quantity returns what the event costs a cap.
func quantity(e *Event, sp CapSpec) (int64, *decode.RecordError) {
	r := e.Fields.Field(e.Record.Value, sp.QuantityPath)
	if r.Type != gjson.Number {
		what := "absent"
		if r.Type != gjson.Null {
			what = r.Type.String()
		}
		return 0, recErr(StageCaps, ReasonCapQuantity, sp.QuantityPath, "cap "+sp.Name+": "+what+", want a whole number ≥ 0")
	}
	if !(r.Num >= 0 && r.Num <= maxCapQuantity) || r.Num != math.Trunc(r.Num) {
		return 0, recErr(StageCaps, ReasonCapQuantity, sp.QuantityPath, "cap "+sp.Name+": "+r.Raw+", want a whole number ≥ 0")
	}
	return int64(r.Num), nil
}

// capHeaders adds the CL.THROTTLE answer of a cap with the given limit to a
// capped event's record. The four numbers share one allocation (the record
// outlives the event).
func capHeaders(e *Event, name string, limit int64, r flow.CapResult) {
	buf := make([]byte, 0, 32) // grows if need be; earlier values keep the old array
	num := func(v int64) []byte {
		start := len(buf)
		buf = strconv.AppendInt(buf, v, 10)
		return buf[start:len(buf):len(buf)]
	}
	ms := func(d time.Duration) []byte {
		if d < 0 {
			return num(-1)
		}
		return num(int64((d + time.Millisecond - 1) / time.Millisecond))
	}
	e.AddHeader(HeaderCap, bytesconv.Bytes(name))
	e.AddHeader(HeaderCapLimit, num(limit))
	e.AddHeader(HeaderCapRemaining, num(r.Remaining()))
	e.AddHeader(HeaderCapRetryAfterMs, ms(r.RetryAfter))
	e.AddHeader(HeaderCapResetAfterMs, ms(r.ResetAfter))
}

// misrouteWarnEvery is the least time between two misrouting warnings of a
// cap, per worker.
const misrouteWarnEvery = time.Minute

// checkKeying counts (and now and then logs) an event whose cap key would
// not be sent to its partition by Kafka's default partitioner.
func (pc *partitionCaps) checkKeying(e *Event, spec int, key []byte) {
	if pc.hasher == nil {
		return
	}
	pc.rec.Key = key
	want := pc.hasher.Partition(&pc.rec, pc.parts)
	pc.rec.Key = nil
	if int32(want) == e.Record.Partition {
		return
	}
	pc.misrouted[spec]++
	s := pc.set
	now := time.Now().UnixNano()
	last := s.lastWarn[spec].Load()
	if now-last < int64(misrouteWarnEvery) || !s.lastWarn[spec].CompareAndSwap(last, now) {
		return
	}
	s.log.Warn().Str("cap", s.specs[spec].Name).Str("source", pc.source).Int64("offset", e.Record.Offset).
		Int("key_partition", want).Bool("record_key_is_cap_key", string(e.Record.Key) == string(key)).
		Msg("input not keyed by the cap key: its records of one key are on several partitions, so the cap is not exact; key the input by the cap key (default partitioner)")
}

// flushMetrics adds the partition's counts to the metrics.
func (pc *partitionCaps) flushMetrics() {
	for i, n := range pc.misrouted {
		if n > 0 {
			pc.set.misrouted[i].Add(float64(n))
			pc.misrouted[i] = 0
		}
	}
}

// committed makes the changes since the last commit the committed state.
func (pc *partitionCaps) committed() {
	for _, d := range pc.dirty {
		clear(d)
	}
	pc.committedMark = pc.watermark
}

// rollback returns the caps to their state at the last commit.
func (pc *partitionCaps) rollback() {
	for i, d := range pc.dirty {
		for k, u := range d {
			pc.restore(i, k, u)
		}
		clear(d)
	}
	pc.watermark = pc.committedMark
}
