package suite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/app"
	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/kafkaconn"
	"github.com/throttler/throttler/pipeline"
)

// BadKind is one kind of bad record: how it is made and where it must end.
type BadKind struct {
	Name    string
	Key     []byte // nil: no record key
	Value   []byte
	Reason  decode.Reason // expected throttler-reason on the dead letter
	Headers []kgo.RecordHeader
}

// HugeValue is a JSON object larger than the decoder's maximum record size.
func HugeValue() []byte {
	return []byte(`{"id":"huge","campaign":"open","user":"u1","pad":"` + strings.Repeat("x", 3*decode.DefaultMaxBytes/2) + `"}`)
}

// BadKinds returns the bad records the suite sends, each meant to go to
// the dead-letter topic with its reason. dupOf is the value of a good
// record sent earlier with key "u7", which the duplicate repeats.
func BadKinds(dupOf []byte) []BadKind {
	ev := func(fields string) []byte {
		return []byte(`{"campaign":"open","user":"u7","ts":1795341600000,` + fields + `}`)
	}
	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	return []BadKind{
		{"not JSON", []byte("u1"), []byte("hello, world"), decode.ReasonNotJSON, nil},
		{"truncated JSON", []byte("u1"), []byte(`{"id":"t1","campaign":"open","user":"u`), decode.ReasonTruncated, nil},
		{"JSON array, not an object", []byte("u1"), []byte(`[1,2,3]`), decode.ReasonNotObject, nil},
		{"bare NaN score (not JSON)", []byte("u1"), ev(`"id":"n0","score":NaN`), decode.ReasonNotJSON, nil},
		{"score NaN as a string", []byte("u1"), ev(`"id":"n1","score":"NaN"`), decode.ReasonScoreType, nil},
		{"score +Inf (1e999)", []byte("u1"), ev(`"id":"n2","score":1e999`), decode.ReasonScoreNotFinite, nil},
		{"score -Inf (-1e999)", []byte("u1"), ev(`"id":"n3","score":-1e999`), decode.ReasonScoreNotFinite, nil},
		{"negative score", []byte("u1"), ev(`"id":"n4","score":-0.5`), decode.ReasonScoreNegative, nil},
		{"score of the wrong type (bool)", []byte("u1"), ev(`"id":"n5","score":true`), decode.ReasonScoreType, nil},
		{"missing score", []byte("u1"), ev(`"id":"n6"`), decode.ReasonMissingScore, nil},
		{"missing budget field", []byte("u1"), []byte(`{"id":"m1","user":"u1","score":1}`), decode.ReasonMissingBudget, nil},
		{"null budget field", []byte("u1"), []byte(`{"id":"m2","campaign":null,"user":"u1","score":1}`), decode.ReasonMissingBudget, nil},
		{"budget of the wrong type (number)", []byte("u1"), []byte(`{"id":"m3","campaign":42,"user":"u1","score":1}`), decode.ReasonBudgetType, nil},
		// The decide stage tells an unknown budget, after decode and the
		// caps: a record faulty for them too gets their reason.
		{"unknown budget", []byte("u1"), []byte(`{"id":"m4","campaign":"nope","user":"u1","score":1,"device":"d1","cost":1,"ts":1795341600000}`), decode.ReasonUnknownBudget, nil},
		{"huge record (1.5 MB)", []byte("u1"), HugeValue(), decode.ReasonTooLarge, nil},
		{"empty value", []byte("u1"), []byte{}, decode.ReasonEmptyValue, nil},
		{"null value (tombstone)", []byte("u1"), nil, decode.ReasonEmptyValue, nil},
		{"blank value", []byte("u1"), []byte(" \n\t "), decode.ReasonEmptyValue, nil},
		{"null key where experiments need one", nil, []byte(`{"id":"k1","campaign":"open","user":null,"score":1}`), decode.ReasonMissingKey, nil},
		{"key of the wrong type (object)", []byte("u1"), []byte(`{"id":"k2","campaign":"open","user":{"a":1},"score":1}`), decode.ReasonKeyType, nil},
		{"invalid UTF-8", []byte("u1"), []byte("{\"id\":\"u8\",\"campaign\":\"open\",\"user\":\"\xff\xfe\",\"score\":1}"), decode.ReasonInvalidUTF8, nil},
		{"deeply nested (100 levels)", []byte("u1"), []byte(`{"id":"d1","campaign":"open","user":"u1","score":1,"x":` + deep + `}`), decode.ReasonTooDeep, nil},
		{"missing id", []byte("u1"), ev(`"score":1`), decode.ReasonMissingID, nil},
		{"id of the wrong type (array)", []byte("u1"), ev(`"id":[1],"score":1`), decode.ReasonIDType, nil},
		{"bad event time", []byte("u1"), []byte(`{"id":"t2","campaign":"open","user":"u1","ts":"yesterday","score":1}`), decode.ReasonBadTime, nil},
		{"negative event time", []byte("u1"), []byte(`{"id":"t3","campaign":"open","user":"u1","ts":-5,"score":1}`), decode.ReasonBadTime, nil},
		{"duplicate id", []byte("u7"), dupOf, pipeline.ReasonDuplicateID, nil},
		// Under the value limit, but over 1 MiB with its headers: its output
		// would be refused by the producer and stall the worker.
		{"990 KB value with 60 KB of headers", []byte("u1"), ev(`"id":"h1","score":1,"device":"d1","cost":1,"pad":"` + strings.Repeat("p", 990_000) + `"`), decode.ReasonTooLarge,
			[]kgo.RecordHeader{{Key: "trace", Value: []byte(strings.Repeat("t", 60_000))}}},
		{"huge key (40 KB)", []byte(strings.Repeat("k", 40_000)), ev(`"id":"h2","score":1,"device":"d1","cost":1`), decode.ReasonTooLarge, nil},
		{"no cap key (device) where a cap needs one", []byte("u1"), []byte(`{"id":"c1","campaign":"open","user":"u1","score":1,"cost":1,"ts":1795341600000}`), pipeline.ReasonMissingCapKey, nil},
		{"cap quantity not a whole number", []byte("u1"), []byte(`{"id":"c2","campaign":"open","user":"u1","score":1,"device":"d","cost":1.5,"ts":1795341600000}`), pipeline.ReasonCapQuantity, nil},
	}
}

// SuiteTimeout bounds the whole suite body.
const SuiteTimeout = 3 * time.Minute

// RunBadInputSuite sends good events with every kind of bad record between
// them through one worker (exactly-once) and checks where each one ended:
// every bad record in the dead-letter topic with its reason and source
// position, every good event in exactly one of the output and rejected
// topics, nothing else written, and the committed ledgers counting as
// many passes as the output holds. brokers and sec reach the cluster;
// groupYAML is the workers' group protocol and timeouts; prefix begins the
// names of the topics and group.
func RunBadInputSuite(t *testing.T, brokers []string, sec config.Security, groupYAML, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), SuiteTimeout)
	defer cancel()
	// Unique names, so that a shared cluster can run the suite twice.
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	base := prefix + "bad-" + run + "-"
	topic := func(s string) string { return base + s }
	events, passed, rejected, dlq := topic("events"), topic("passed"), topic("rejected"), topic("dlq")

	conn, err := kafkaconn.Opts(brokers, sec)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(conn, kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	big := "4194304" // the input topic accepts the huge record; the worker must not choke on it
	if _, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"max.message.bytes": &big}, events); err != nil {
		t.Fatalf("create %s: %v", events, err)
	}

	cfg, err := config.Parse(SuiteYAML(brokers, topic("group"), events, passed, rejected, dlq, groupYAML))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Security = sec

	// Good events: "open" passes nearly all, "tight" rejects all but one.
	// Bad records sit between them, in order, on every partition.
	type sent struct {
		bad    *BadKind
		budget string
	}
	var recs []*kgo.Record
	want := map[int]sent{}
	add := func(key, value []byte, s sent, extra ...kgo.RecordHeader) {
		seq := len(recs)
		want[seq] = s
		recs = append(recs, &kgo.Record{Topic: events, Key: key, Value: value,
			Headers: append([]kgo.RecordHeader{{Key: "suite-seq", Value: []byte(strconv.Itoa(seq))}}, extra...)})
	}
	good := func(i int) {
		budget := "open"
		if i%5 == 0 {
			budget = "tight"
		}
		user := fmt.Sprintf("u%d", i%11)
		add([]byte(user), fmt.Appendf(nil, `{"id":"g%d","campaign":%q,"user":%q,"device":"d%d","cost":1,"score":%d,"ts":1795341600000}`, i, budget, user, i%3, i%7), sent{budget: budget})
	}
	first := []byte(`{"id":"g-dup","campaign":"open","user":"u7","device":"d1","cost":1,"score":1,"ts":1795341600000}`)
	add([]byte("u7"), first, sent{budget: "open"})
	kinds := BadKinds(first)
	goods := 10 * (len(kinds) + 1) // a bad record after every ten good ones
	for i := range goods {
		good(i)
		if k := i / 10; i%10 == 5 && k < len(kinds) {
			add(kinds[k].Key, kinds[k].Value, sent{bad: &kinds[k]}, kinds[k].Headers...)
		}
	}
	if got := len(want) - goods - 1; got != len(kinds) {
		t.Fatalf("sent %d bad records, want %d", got, len(kinds))
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	w, _, err := app.NewWorker(cfg, consumer.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	WaitCommitted(ctx, t, adm, cfg.Group, events)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("worker: %v", err)
	}

	got := ReadCommitted(ctx, t, conn, passed, rejected, dlq)
	where := map[int]*kgo.Record{}
	for _, r := range got {
		s, _ := pipeline.HeaderValue(r, "suite-seq")
		seq, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: record without suite-seq header: %q", r.Topic, r.Value)
		}
		if prev, dup := where[seq]; dup {
			t.Fatalf("record %d in %s and in %s", seq, prev.Topic, r.Topic)
		}
		where[seq] = r
	}
	counts := map[string]int{}
	for seq := range len(recs) {
		s := want[seq]
		r, ok := where[seq]
		switch {
		case !ok:
			t.Errorf("record %d (%v) is nowhere", seq, KindName(s.bad))
			continue
		case s.bad != nil:
			reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason)
			src, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceTopic)
			off, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceOffset)
			if r.Topic != dlq || reason != string(s.bad.Reason) || src != events || off == "" {
				t.Errorf("%s: in %s with reason %q (source %s@%s), want %s with %q", s.bad.Name, r.Topic, reason, src, off, dlq, s.bad.Reason)
			}
			t.Logf("%-40s -> %s, reason %s", s.bad.Name, strings.TrimPrefix(r.Topic, base), reason)
		case r.Topic == dlq:
			reason, _ := pipeline.HeaderValue(r, pipeline.HeaderError)
			t.Errorf("good record %d dead-lettered: %s: %s", seq, reason, r.Value)
		}
		counts[strings.TrimPrefix(r.Topic, base)]++
		if s.budget == "tight" && r.Topic == passed {
			counts["tight passed"]++
		}
	}
	if len(where) != len(want) {
		t.Errorf("outputs hold %d records, sent %d", len(where), len(want))
	}
	t.Logf("sent %d good and %d bad records: %v", goods+1, len(kinds), counts)
	if counts["dlq"] != len(kinds) || counts["passed"]+counts["rejected"] != goods+1 {
		t.Errorf("counts %v: want %d dead letters and %d outputs", counts, len(kinds), goods+1)
	}
	// A too-large record's dead letter is cut to fit (value to the
	// maximum record size, key to 1 KiB, small source headers kept) and
	// gives the source value's size; the whole record is still at its
	// source offset.
	for seq, r := range where {
		s := want[seq]
		if s.bad == nil || s.bad.Reason != decode.ReasonTooLarge {
			continue
		}
		size, _ := pipeline.HeaderValue(r, pipeline.HeaderOriginalSize)
		hdr := 0
		for _, h := range r.Headers {
			hdr += len(h.Key) + len(h.Value)
		}
		if len(r.Value) > decode.DefaultMaxBytes || len(r.Key) > 1024 || hdr > decode.MaxKeyAndHeaderBytes ||
			size != strconv.Itoa(len(s.bad.Value)) {
			t.Errorf("%s: dead letter of %d+%d+%d bytes (value, key, headers), %s=%q", s.bad.Name,
				len(r.Value), len(r.Key), hdr, pipeline.HeaderOriginalSize, size)
		}
	}
	CheckPassesCounted(ctx, t, conn, cfg, events, counts["passed"], counts["passed"]+counts["rejected"])
}

// SuiteYAML is the worker configuration of the suite's runs; extra is
// more YAML (a format section).
func SuiteYAML(brokers []string, group, events, passed, rejected, dlq, extra string) []byte {
	now := time.Now()
	return fmt.Appendf(nil, `brokers: [%s]
group: %s
topics: {input: [%s], output: %s, rejected: %s, dead_letter: %s, partitions: 3}
fields: {budget: campaign, key: user, id: id, score: score, time: ts}
dedup_window: 1000
caps:
  - {name: per-device, key: device, rate: 1000000/1h, burst: 100000, quantity: cost}
commit_interval: 50ms
budgets:
  - {name: open, target: 1e9, begin: %s, end: %s}
  - {name: tight, target: 1, period: 1h}
layers:
  - name: ui
    experiments:
      - name: colour
        allocation: 50
        variants:
          - {name: red, weight: 1, topic: %s}
          - {name: blue, weight: 1, topic: %s}
http: {listen: "127.0.0.1:0"}
%s`, strings.Join(brokers, ","), group, events, passed, rejected, dlq,
		now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), passed, passed, extra)
}

func KindName(k *BadKind) string {
	if k == nil {
		return "good"
	}
	return k.Name
}

// WaitCommitted waits until group has committed the end of every
// partition of topic.
func WaitCommitted(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	for {
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		if err1 == nil && err2 == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At < o.Offset {
					done = false
				}
			})
			if done {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s did not commit the end of %s", group, topic)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ReadCommitted reads every committed record of topics, up to their end
// offsets.
func ReadCommitted(ctx context.Context, t *testing.T, conn []kgo.Opt, topics ...string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.FetchMaxBytes(16 << 20)}, conn...)...) // conn may override
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			pending[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(pending) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %v: still pending %v", topics, pending)
		}
		fs.EachRecord(func(r *kgo.Record) {
			tp := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if end, ok := pending[tp]; ok && r.Offset >= end-1 {
				delete(pending, tp)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// CheckPassesCounted checks that the committed ledgers of the input's
// partitions count exactly the passes the output holds, and as offered
// exactly the events decided (passed or rejected; no dead letter).
func CheckPassesCounted(ctx context.Context, t *testing.T, conn []kgo.Opt, cfg *config.Config, input string, outputs, decided int) {
	t.Helper()
	var passed, offered uint64
	for _, st := range LoadLedgers(ctx, t, conn, cfg.Topics.Stats, input, 3) {
		for _, r := range st.Reports {
			passed += r.Total.Passed
			offered += r.Total.Offered
		}
	}
	if passed != uint64(outputs) {
		t.Errorf("ledgers count %d passes, the output holds %d", passed, outputs)
	}
	if offered != uint64(decided) {
		t.Errorf("ledgers count %d offered, the output and rejected topics hold %d", offered, decided)
	}
}
