package suite

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/stats"
)

// InjectStats writes records no worker writes to the stats and caps
// topics: bad ledger records under four sources (parked once restored),
// a delta key with a huge number (not parked), definitions that break
// flow's rules, a worker status out of bounds, a corrupt caps record.
func (h *HostileRun) InjectStats(ctx context.Context) {
	t := h.T
	key := func(p int32, part stats.LedgerPart, index uint32) []byte {
		k, err := stats.LedgerKey(stats.SourceName(h.Events, p), part, index)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	enc := func(p int32, r stats.LedgerRecord) []byte {
		r.Source, r.At = stats.SourceName(h.Events, p), time.Now()
		_, v, err := stats.EncodeLedger(r)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// A sequence of 2^64-1, which a writer continuing it wraps to 0.
	wrap := binary.AppendUvarint([]byte{1, 1}, math.MaxUint64)
	wrap = binary.AppendVarint(wrap, time.Now().Unix())
	wrap = binary.AppendUvarint(wrap, 0)
	wrap = binary.AppendVarint(wrap, 1)
	wrap = binary.AppendUvarint(wrap, 0)
	const far = 1 << 20 // delta numbers no owner reaches: the records stay
	recs := []*kgo.Record{
		{Topic: h.Stats, Partition: 0, Key: key(0, stats.LedgerDelta, far), Value: []byte{2, 0}},
		{Topic: h.Stats, Partition: 1, Key: key(1, stats.LedgerDelta, far), Value: enc(1, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 40, Offset: 1 << 40})},
		{Topic: h.Stats, Partition: 2, Key: key(2, stats.LedgerDelta, far), Value: wrap},
		{Topic: h.Stats, Partition: 3, Key: key(3, stats.LedgerDelta, 1<<31), Value: enc(3, stats.LedgerRecord{Part: stats.LedgerDelta, Index: 1 << 31, Seq: 1, Offset: 0})},
		{Topic: h.Stats, Partition: 4, Key: key(4, stats.LedgerDelta, far), Value: enc(4, stats.LedgerRecord{Part: stats.LedgerDelta, Index: far, Seq: 1 << 41, Offset: 5,
			Reports: []flow.Report{{Budget: "open", Total: flow.Counters{Offered: 1, Passed: 1, Rewards: math.Inf(1)}}}})},
	}
	var defs []*kgo.Record
	for _, b := range []flow.Budget{
		{Name: "huge", Target: 1.7e308, Period: time.Minute},
		{Name: "tiny", Target: 5e-324, Period: time.Minute},
		{Name: "far", Target: 10, Begin: time.Now(), End: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		k, v, err := stats.EncodeBudgetDef(stats.BudgetDef{Budget: b, At: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, &kgo.Record{Topic: h.Stats, Partition: 5, Key: k, Value: v})
	}
	ws := stats.WorkerStatus{Worker: "forged", At: time.Now(), SyncInterval: time.Second}
	k, v, err := stats.EncodeWorkerStatus(ws)
	if err != nil {
		t.Fatal(err)
	}
	// Minor 1, then 1,000 parked sources claimed: more than a worker lists.
	v = append(binary.AppendUvarint(v[:len(v)-1], 1000), 1, 'x', 1, 'y')
	defs = append(defs, &kgo.Record{Topic: h.Stats, Partition: 5, Key: k, Value: v})
	capRec := stats.CapRecord(h.Caps, 5, stats.SourceName(h.Events, 5), "per-device", []byte("d1"), time.Now(), false)
	capRec.Value = []byte{9, 9}
	ProduceRaw(ctx, t, h.Conn, append(append(recs, defs...), capRec)...)
	h.Row("stats: 0x02 0x00 under a ledger key of %s/0 -> parked (unknown_version) once restored", h.Events)
	h.Row("stats: a well-formed ledger record of %s/1 with input offset 2^40 -> parked (beyond_end) once restored", h.Events)
	h.Row("stats: a ledger record of %s/2 with sequence 2^64-1 -> parked (corrupt) once restored", h.Events)
	h.Row("stats: a well-formed delta numbered 2^31 under %s/3 -> not parked; the next snapshot tombstones that key only", h.Events)
	h.Row("stats: a delta of %s/4 with rewards +Inf -> parked (corrupt) once restored", h.Events)
	h.Row("stats: definitions with targets 1.7e308 and 5e-324 and an end in the year 20000, a worker status claiming 1,000 parked sources -> skipped by every reader (status, dashboard)")
	h.Row("caps: an undecodable changelog record of %s/5 -> skipped at the caps load, one line; the partition runs", h.Events)
}

// InjectControl writes bad control records and tries a bad budget with
// the CLI.
func (h *HostileRun) InjectControl(ctx context.Context) {
	t := h.T
	long := strings.Repeat("k", 900<<10)
	longName := strings.Repeat("n", 400<<10)
	recs := []*kgo.Record{
		{Topic: h.Control, Key: []byte(long), Value: []byte(`{"version":1}`)},
		{Topic: h.Control, Key: []byte(longName), Value: []byte(`{"version":1,"name":"` + longName + `","deleted":true}`)},
		{Topic: h.Control, Key: []byte("huge"), Value: []byte(`{"version":1,"name":"huge","target":1.7e308,"period":"1m"}`)},
		{Topic: h.Control, Key: []byte("tiny"), Value: []byte(`{"version":1,"name":"tiny","target":5e-324,"period":"1m"}`)},
	}
	for i := range flow.MaxDepth + 1 {
		v := fmt.Sprintf(`{"version":1,"name":"level-%02d","target":100,"period":"1m"`, i)
		if i > 0 {
			v += fmt.Sprintf(`,"parent":"level-%02d"`, i-1)
		}
		recs = append(recs, &kgo.Record{Topic: h.Control, Key: fmt.Appendf(nil, "level-%02d", i), Value: []byte(v + "}")})
	}
	ProduceRaw(ctx, t, h.Conn, recs...)
	code, _, errOut := h.CliRun("budget", "set", "--brokers", strings.Join(h.Brokers, ","), "--group", h.Group,
		"--name", "huge", "--target", "1.7e308", "--period", "1m")
	if code == 0 || !strings.Contains(errOut, "target") {
		t.Fatalf("budget set --target 1.7e308: exit %d\n%s", code, errOut)
	}
	h.Row("control: a record with a 900 KiB key, a deletion of a 400 KiB name -> ignored or waiting, logged in clipped lines")
	h.Row("control: targets 1.7e308 and 5e-324 -> invalid, counted, ignored; 'throttler budget set --target 1.7e308' -> exit %d, nothing written", code)
	h.Row("control: budgets nested %d deep -> the deepest waits (nesting at most %d)", flow.MaxDepth+1, flow.MaxDepth)
}

// InjectEvents sends reward and input records that are out of range,
// long or of unknown schemas.
func (h *HostileRun) InjectEvents(ctx context.Context, tr *Traffic) {
	t := h.T
	var rewards []*kgo.Record
	for i, v := range []string{"1.7e308", "1.7e308", "5000", "1", "2", "3"} {
		rewards = append(rewards, &kgo.Record{Topic: h.Clicks, Partition: int32(i % 2), Key: []byte("r"),
			Value: []byte(`{"campaign":"clicks","value":` + v + `}`)})
	}
	var framedRecs []*kgo.Record
	for i := range 300 {
		framedRecs = append(framedRecs, &kgo.Record{Topic: h.FramedTopic, Partition: int32(i % 2), Value: Framed(uint32(1_000_000 + 7919*i))})
	}
	ProduceRaw(ctx, t, h.Conn, append(rewards, framedRecs...)...)
	// Good events with a 200 KiB cap key and a 200 KiB id: delivered.
	var long []*kgo.Record
	for i := range 3 {
		long = append(long, &kgo.Record{Topic: h.Events, Key: []byte("long"),
			Value: fmt.Appendf(nil, `{"id":"long%d-%s","campaign":"open","user":"long","device":"%s"}`, i, strings.Repeat("i", 200<<10), strings.Repeat("d", 200<<10))})
	}
	if err := tr.Produce(long...); err != nil {
		t.Fatal(err)
	}
	h.Row("rewards: two of 1.7e308 and one of 5000 (max_value 1000) -> dead letters, reason reward_out_of_range; the counter stays finite")
	h.Row("input: 3 events with a 200 KiB cap key and a 200 KiB id -> delivered; kept as 72-byte digests")
	h.Row("input: 300 framed records of distinct unknown schema ids -> dead letters (unknown_schema), registry lookups rate-limited")
}
