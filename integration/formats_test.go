package integration

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/pipeline"
)

// TestFormatsKfake runs the same end-to-end checks on JSON, Avro and
// Protobuf input topics (one worker, exactly-once, an embedded broker and
// an in-process schema registry): every bad record in the dead-letter
// topic with its reason, every good event exactly once in the output or
// rejected topic with its bytes unchanged, the checkpoints counting what
// the output holds. (Budgets within 1%: TestPacedFormats.) It runs on
// kfake and on Apache Kafka.
func TestFormats(t *testing.T) {
	onBrokers(t, bothBrokers, func(t *testing.T, k brokerKind) {
		ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
		defer cancel()
		b, srv := sharedCluster(t, k, 3), startRegistry(t)
		formats, avroID, protoID := newSuiteFormats(t, srv)
		for _, f := range formats {
			t.Run(f.name, func(t *testing.T) {
				runFormatSuite(ctx, t, k, b.prefix, []string{b.addr}, srv.URL(), f, formatBadKinds(f, avroID, protoID))
			})
		}
	})
}

// suiteBase is the good event the bad ones are made from.
var suiteBase = suiteEvent{id: "x", campaign: str("open"), user: str("u7"), device: str("d1"), cost: 1, score: num(1), ts: 1795341600000}

// formatBadKinds returns the bad records of format f: those every format
// has, and the format's own.
func formatBadKinds(f suiteFormat, avroID, protoID int) []badKind {
	bad := func(name string, edit func(*suiteEvent), reason decode.Reason) badKind {
		e := suiteBase.with(func(e *suiteEvent) { e.id = "bad " + name }) // no duplicate id
		return badKind{name: name, key: []byte("u1"), value: f.encode(e.with(edit)), reason: reason}
	}
	kinds := []badKind{
		bad("null budget", func(e *suiteEvent) { e.campaign = nil }, decode.ReasonMissingBudget),
		bad("unknown budget", func(e *suiteEvent) { e.campaign = str("nope") }, decode.ReasonUnknownBudget),
		bad("negative score", func(e *suiteEvent) { e.score = num(-0.5) }, decode.ReasonScoreNegative),
		bad("missing score", func(e *suiteEvent) { e.score = nil }, decode.ReasonMissingScore),
		bad("null key where experiments need one", func(e *suiteEvent) { e.user = nil }, decode.ReasonMissingKey),
		bad("invalid UTF-8 key", func(e *suiteEvent) { e.user = str("\xff\xfe") }, decode.ReasonInvalidUTF8),
		bad("no cap key", func(e *suiteEvent) { e.device = nil }, pipeline.ReasonMissingCapKey),
		bad("cap quantity not a whole number", func(e *suiteEvent) { e.cost = 1.5 }, pipeline.ReasonCapQuantity),
		bad("negative event time", func(e *suiteEvent) { e.ts = -5 }, decode.ReasonBadTime),
		bad("huge record (1.5 MB)", func(e *suiteEvent) { e.id = strings.Repeat("h", 3*decode.DefaultMaxBytes/2) }, decode.ReasonTooLarge),
		{name: "empty value", key: []byte("u1"), value: []byte{}, reason: decode.ReasonEmptyValue},
	}
	if f.header == nil {
		return append(kinds,
			badKind{name: "score +Inf (1e999)", key: []byte("u1"), reason: decode.ReasonScoreNotFinite,
				value: bytes.Replace(jsonEvent(suiteBase), []byte(`"score":1`), []byte(`"score":1e999`), 1)},
			badKind{name: "not JSON", key: []byte("u1"), value: []byte("hello"), reason: decode.ReasonNotJSON})
	}
	other := frameHeader(protoID, true)
	if f.name == "protobuf" {
		other = frameHeader(avroID, false)
	}
	good := f.encode(suiteBase.with(func(e *suiteEvent) { e.id = "long-enough-id" }))
	return append(kinds,
		bad("NaN score", func(e *suiteEvent) { e.score = num(math.NaN()) }, decode.ReasonScoreNotFinite),
		badKind{name: "JSON on a framed topic", key: []byte("u1"), value: jsonEvent(suiteBase), reason: decode.ReasonNotFramed},
		badKind{name: "unknown schema id", key: []byte("u1"), value: append(frameHeader(999, f.name == "protobuf"), good[len(f.header):]...), reason: decode.ReasonUnknownSchema},
		badKind{name: "a schema of the other format", key: []byte("u1"), value: append(other, good[len(f.header):]...), reason: decode.ReasonBadSchema},
		badKind{name: "truncated payload", key: []byte("u1"), value: good[:len(f.header)+4], reason: decode.ReasonSchemaMismatch},
	)
}

// runFormatSuite sends good events with the bad records kinds between
// them in format f through one worker and checks where each one ended.
func runFormatSuite(ctx context.Context, t *testing.T, k brokerKind, prefix string, brokers []string, registryURL string, f suiteFormat, kinds []badKind) {
	run := f.name + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	topic := func(s string) string { return prefix + "fmt-" + run + "-" + s }
	events, passed, rejected, dlq := topic("events"), topic("passed"), topic("rejected"), topic("dlq")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	big := "4194304"
	if _, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"max.message.bytes": &big}, events); err != nil {
		t.Fatalf("create %s: %v", events, err)
	}
	cfg := formatSuiteConfig(t, k, brokers, registryURL, f.name, run, events, passed, rejected, dlq)

	// Good events: "open" passes all, "tight" one an hour; a bad record
	// after every ten good ones.
	var recs []*kgo.Record
	var bad []*badKind
	add := func(key, value []byte, k *badKind) {
		recs = append(recs, &kgo.Record{Topic: events, Key: key, Value: value,
			Headers: []kgo.RecordHeader{{Key: "suite-seq", Value: []byte(strconv.Itoa(len(recs)))}}})
		bad = append(bad, k)
	}
	first := f.encode(suiteBase.with(func(e *suiteEvent) { e.id = "g-dup" }))
	add([]byte("u7"), first, nil)
	kinds = append(kinds, badKind{name: "duplicate id", key: []byte("u7"), value: first, reason: pipeline.ReasonDuplicateID})
	goods := 10 * (len(kinds) + 1)
	for i := range goods {
		budget := "open"
		if i%5 == 0 {
			budget = "tight"
		}
		user := fmt.Sprintf("u%d", i%11)
		add([]byte(user), f.encode(suiteEvent{id: fmt.Sprintf("g%d", i), campaign: str(budget), user: str(user),
			device: str(fmt.Sprintf("d%d", i%3)), cost: 1, score: num(float64(i % 7)), ts: 1795341600000}), nil)
		if k := i / 10; i%10 == 5 && k < len(kinds) {
			add(kinds[k].key, kinds[k].value, &kinds[k])
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	_, _, stop := runWorker(ctx, t, cfg, zerolog.WarnLevel)
	waitCommitted(ctx, t, adm, cfg.Group, events)
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	counts := checkFormatOutputs(t, readCommitted(ctx, t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, passed, rejected, dlq), recs, bad, dlq)
	t.Logf("%s: sent %d good and %d bad records: %v", f.name, goods+1, len(kinds), counts)
	if counts[dlq] != len(kinds) || counts[passed]+counts[rejected] != goods+1 {
		t.Errorf("counts %v: want %d dead letters and %d outputs", counts, len(kinds), goods+1)
	}
	if counts[rejected] == 0 || counts["tight passed"] > 1 {
		t.Errorf("tight: %d passed, %d rejected in all", counts["tight passed"], counts[rejected])
	}
	checkPassesCounted(ctx, t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, cfg, events, counts[passed], counts[passed]+counts[rejected])
}

// formatSuiteConfig returns the worker's configuration of the suite:
// the JSON suite's, reading format through the registry.
func formatSuiteConfig(t *testing.T, k brokerKind, brokers []string, registryURL, format, run, events, passed, rejected, dlq string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(suiteYAML(brokers, "fmt-"+run, events, passed, rejected, dlq,
		fmt.Sprintf("format: {input: %s}\nschema_registry: {urls: [%q]}\n", format, registryURL)+k.groupYAML(groupTimeouts{})))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkFormatOutputs checks that every record sent is in exactly one
// output topic, a bad one in dlq with its reason and source, a good one
// with its value unchanged; it returns the count per topic, and of the
// tight budget's passes.
func checkFormatOutputs(t *testing.T, got, sent []*kgo.Record, bad []*badKind, dlq string) map[string]int {
	t.Helper()
	where := map[int]*kgo.Record{}
	for _, r := range got {
		s, _ := pipeline.HeaderValue(r, "suite-seq")
		seq, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: record without suite-seq header", r.Topic)
		}
		if prev, dup := where[seq]; dup {
			t.Fatalf("record %d in %s and in %s", seq, prev.Topic, r.Topic)
		}
		where[seq] = r
	}
	counts := map[string]int{}
	for seq, s := range sent {
		r, ok := where[seq]
		k := bad[seq]
		switch {
		case !ok:
			t.Errorf("record %d (%v) is nowhere", seq, kindName(k))
			continue
		case k != nil:
			reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason)
			src, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceTopic)
			if r.Topic != dlq || reason != string(k.reason) || src != s.Topic {
				msg, _ := pipeline.HeaderValue(r, pipeline.HeaderError)
				t.Errorf("%s: in %s with reason %q (%s), want %s with %q", k.name, r.Topic, reason, msg, dlq, k.reason)
			}
		case r.Topic == dlq:
			msg, _ := pipeline.HeaderValue(r, pipeline.HeaderError)
			t.Errorf("good record %d dead-lettered: %s", seq, msg)
		case !bytes.Equal(r.Value, s.Value):
			t.Errorf("good record %d: output value %x, sent %x (outputs must not be re-encoded)", seq, r.Value, s.Value)
		}
		counts[r.Topic]++
		if b, _ := pipeline.HeaderValue(r, pipeline.HeaderBudget); b == "tight" && k == nil && r.Topic != dlq {
			if d, _ := pipeline.HeaderValue(r, pipeline.HeaderDecision); d == pipeline.DecisionPass {
				counts["tight passed"]++
			}
		}
	}
	return counts
}
