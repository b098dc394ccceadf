package stats

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Worker status records (kind 6): what each worker says about itself
// every sync interval, for operators (`throttler dashboard`). Flow control
// never reads them.
//
//	kind 6  worker status, one per worker
//	        key:   6, u16 worker (its id: the transactional id)
//	        value: WorkerStatus (major 1, minor 0)
//
// Value layout (as in kinds.go):
//
//	WorkerStatus 1.0: At time, Started time, SyncInterval zig-zag varint
//	                  ns, Commits uvarint, Aborted uvarint, DeadLetters
//	                  uvarint, Omitted uvarint, count uvarint, then count x
//	                  (source str non-empty, strictly increasing; Lag
//	                  zig-zag varint; Offset zig-zag varint; Committed
//	                  time)
//	WorkerStatus 1.1: 1.0, then parked uvarint, then parked x (source str
//	                  non-empty, strictly increasing; reason str): the
//	                  parked sources (a 1.0 reader skips them)
//
// Cost: W records per sync interval (one per worker, never one per budget
// or per partition), each at most MaxWorkerStatusBytes; the compacted
// topic keeps one per worker id. A worker that stops leaves its last
// record: readers tell a silent worker by the record's age against its
// SyncInterval.

// KindWorker is a worker's status (WorkerStatus).
const KindWorker Kind = 6

// MaxWorkerStatusBytes bounds a worker status value. Sources that do not
// fit are left out (counted in Omitted), so a worker owning thousands of
// partitions still publishes one small record.
const MaxWorkerStatusBytes = 64 << 10

// WorkerStatus is what one worker publishes about itself.
type WorkerStatus struct {
	// Worker is the worker's id (its transactional id): the record's
	// identity.
	Worker string
	// At is when it was published; Started when the worker started.
	At, Started time.Time
	// SyncInterval is how often the worker publishes: a record much older
	// than that comes from a worker that stopped or is stuck.
	SyncInterval time.Duration
	// Commits and Aborted count the transactions (or offset commits)
	// committed and aborted since Started; DeadLetters the records sent
	// to the dead-letter topic since Started.
	Commits, Aborted, DeadLetters uint64
	// Sources are the sources (input and reward partitions) the worker
	// owns, sorted by source once encoded or decoded.
	Sources []SourceStatus
	// Omitted counts the owned sources left out of Sources to keep the
	// record under MaxWorkerStatusBytes.
	Omitted int
	// Parked are the owned sources the worker parked (their ledger
	// cannot be restored whole), sorted by source once encoded or
	// decoded; at most MaxParkedListed, reasons at most MaxReasonBytes.
	Parked []ParkedSource
}

// ParkedSource is a source a worker parked, and why.
type ParkedSource struct {
	Source string
	Reason string
}

// Bounds of a WorkerStatus's Parked.
const (
	MaxParkedListed = 64
	MaxReasonBytes  = 512
)

// SourceStatus is one owned source (partition) of a WorkerStatus.
type SourceStatus struct {
	// Source is the source's name (SourceName: "topic/partition").
	Source string
	// Lag is the number of records between the last one processed and
	// the partition's high watermark, as of the last fetch; -1 unknown.
	Lag int64
	// Offset is the next offset to read as last committed; -1 none yet.
	Offset int64
	// Committed is when the worker last committed the source's offset;
	// zero when it has not yet.
	Committed time.Time
}

const workerMajor, workerMinor = 1, 1

// maxSyncInterval bounds a worker status's sync interval (readers multiply
// it: a status is silent past five of them).
const maxSyncInterval = 24 * time.Hour

// WorkerKey returns the stats-topic key of a worker's status.
func WorkerKey(worker string) ([]byte, error) { return appendKey(KindWorker, worker) }

// EncodeWorkerStatus returns the key and value of a worker status record.
// Sources must have distinct, non-empty names; they are sorted, and those
// that would take the value past MaxWorkerStatusBytes are left out and
// counted in Omitted.
func EncodeWorkerStatus(ws WorkerStatus) (key, value []byte, err error) {
	if key, err = WorkerKey(ws.Worker); err != nil {
		return nil, nil, err
	}
	srcs := slices.Clone(ws.Sources)
	slices.SortFunc(srcs, func(a, b SourceStatus) int { return strings.Compare(a.Source, b.Source) })
	var body []byte
	kept := 0
	for i, s := range srcs {
		if s.Source == "" || (i > 0 && s.Source == srcs[i-1].Source) {
			return nil, nil, &ReportError{Budget: KindWorker.String(), Source: s.Source, Msg: "source empty or listed twice"}
		}
		n := len(body)
		body = appendStr(body, s.Source)
		body = binary.AppendVarint(body, s.Lag)
		body = binary.AppendVarint(body, s.Offset)
		body = appendTime(body, s.Committed)
		if len(body)+128 > MaxWorkerStatusBytes { // 128: the fixed fields, generously
			body = body[:n]
			break
		}
		kept++
	}
	b := make([]byte, 0, 64+len(body))
	b = append(b, workerMajor, workerMinor)
	b = appendTime(b, ws.At)
	b = appendTime(b, ws.Started)
	b = binary.AppendVarint(b, int64(ws.SyncInterval))
	b = binary.AppendUvarint(b, ws.Commits)
	b = binary.AppendUvarint(b, ws.Aborted)
	b = binary.AppendUvarint(b, ws.DeadLetters)
	b = binary.AppendUvarint(b, uint64(max(ws.Omitted, 0)+len(srcs)-kept))
	b = binary.AppendUvarint(b, uint64(kept))
	b = append(b, body...)
	parked := slices.Clone(ws.Parked)
	slices.SortFunc(parked, func(a, b ParkedSource) int { return strings.Compare(a.Source, b.Source) })
	parked = parked[:min(len(parked), MaxParkedListed)]
	b = binary.AppendUvarint(b, uint64(len(parked)))
	for i, p := range parked {
		if p.Source == "" || len(p.Source) > MaxNameLen || (i > 0 && p.Source == parked[i-1].Source) {
			return nil, nil, &ReportError{Budget: KindWorker.String(), Source: p.Source, Msg: "parked source empty, overlong or listed twice"}
		}
		b = appendStr(appendStr(b, p.Source), p.Reason[:min(len(p.Reason), MaxReasonBytes)])
	}
	return key, b, nil
}

// decodeWorker decodes a kind-6 key and value (nil: a tombstone).
func decodeWorker(key, value []byte, ws *WorkerStatus) error {
	d := decoder{what: "key", b: key, pos: 1}
	ws.Worker = d.name16("worker")
	d.end()
	if d.err != nil || value == nil {
		return d.err
	}
	d = decoder{what: "worker status", b: value}
	minor := d.version(workerMajor)
	ws.At = d.time()
	ws.Started = d.time()
	at := d.pos
	ws.SyncInterval = time.Duration(d.varint())
	ws.Commits, ws.Aborted, ws.DeadLetters = d.uvarint(), d.uvarint(), d.uvarint()
	if d.err == nil && (ws.SyncInterval < 0 || ws.SyncInterval > maxSyncInterval || max(ws.Commits, ws.Aborted, ws.DeadLetters) > MaxCount) {
		d.fail(at, ErrCorrupt, "sync interval %v or counts (%d, %d, %d) out of range", ws.SyncInterval, ws.Commits, ws.Aborted, ws.DeadLetters)
	}
	omitted := d.uvarint()
	at = d.pos
	n := d.uvarint()
	if d.err == nil && (n > uint64(d.rest()/5) || omitted > MaxWorkerStatusBytes<<8) { // a source takes at least 5 bytes
		d.fail(at, ErrCorrupt, "%d sources (%d omitted) cannot fit in %d bytes", n, omitted, d.rest())
	}
	ws.Omitted = int(omitted)
	for i := uint64(0); i < n && d.err == nil; i++ {
		at := d.pos
		s := SourceStatus{Source: d.nameVar("source"), Lag: d.varint(), Offset: d.varint(), Committed: d.time()}
		switch {
		case d.err != nil:
		case len(ws.Sources) > 0 && s.Source <= ws.Sources[len(ws.Sources)-1].Source:
			d.fail(at, ErrCorrupt, "source %q out of order or repeated", s.Source)
		case s.Lag < -1 || s.Lag > MaxCount || s.Offset < -1:
			d.fail(at, ErrCorrupt, "source %q lag %d or offset %d out of range", s.Source, s.Lag, s.Offset)
		}
		ws.Sources = append(ws.Sources, s)
	}
	if minor >= 1 {
		at := d.pos
		n := d.uvarint()
		if d.err == nil && n > MaxParkedListed {
			d.fail(at, ErrCorrupt, "%d parked sources, more than %d", n, MaxParkedListed)
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			at := d.pos
			p := ParkedSource{Source: d.nameVar("parked source"), Reason: d.str("reason")}
			if d.err == nil && (len(p.Reason) > MaxReasonBytes || len(ws.Parked) > 0 && p.Source <= ws.Parked[len(ws.Parked)-1].Source) {
				d.fail(at, ErrCorrupt, "parked source out of order or repeated, or reason too long")
			}
			ws.Parked = append(ws.Parked, p)
		}
	}
	if minor <= workerMinor {
		d.end()
	}
	return d.err
}

// WorkerRecord returns the record of a worker's status (kind 6).
func (p *Publisher) WorkerRecord(ws WorkerStatus) (*kgo.Record, error) {
	k, v, err := EncodeWorkerStatus(ws)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: p.topic, Key: k, Value: v}, nil
}

// Workers returns the newest status of every worker that published one,
// sorted by worker id. Stopped workers stay until their record is
// deleted (WorkerKey tombstone): compare At with SyncInterval.
func (v *View) Workers() []WorkerStatus {
	v.mu.RLock()
	out := values(v.defs.workers)
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b WorkerStatus) int { return strings.Compare(a.Worker, b.Worker) })
	return out
}
