package suite

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

// SuiteBase is the good event the bad ones are made from.
var SuiteBase = SuiteEvent{Id: "x", Campaign: Str("open"), User: Str("u7"), Device: Str("d1"), Cost: 1, Score: Num(1), Ts: 1795341600000}

// FormatBadKinds returns the bad records of format f: those every format
// has, and the format's own.
func FormatBadKinds(f SuiteFormat, avroID, protoID int) []BadKind {
	bad := func(name string, edit func(*SuiteEvent), reason decode.Reason) BadKind {
		e := SuiteBase.With(func(e *SuiteEvent) { e.Id = "bad " + name }) // no duplicate id
		return BadKind{Name: name, Key: []byte("u1"), Value: f.Encode(e.With(edit)), Reason: reason}
	}
	kinds := []BadKind{
		bad("null budget", func(e *SuiteEvent) { e.Campaign = nil }, decode.ReasonMissingBudget),
		bad("unknown budget", func(e *SuiteEvent) { e.Campaign = Str("nope") }, decode.ReasonUnknownBudget),
		bad("negative score", func(e *SuiteEvent) { e.Score = Num(-0.5) }, decode.ReasonScoreNegative),
		bad("missing score", func(e *SuiteEvent) { e.Score = nil }, decode.ReasonMissingScore),
		bad("null key where experiments need one", func(e *SuiteEvent) { e.User = nil }, decode.ReasonMissingKey),
		bad("invalid UTF-8 key", func(e *SuiteEvent) { e.User = Str("\xff\xfe") }, decode.ReasonInvalidUTF8),
		bad("no cap key", func(e *SuiteEvent) { e.Device = nil }, pipeline.ReasonMissingCapKey),
		bad("cap quantity not a whole number", func(e *SuiteEvent) { e.Cost = 1.5 }, pipeline.ReasonCapQuantity),
		bad("negative event time", func(e *SuiteEvent) { e.Ts = -5 }, decode.ReasonBadTime),
		bad("huge record (1.5 MB)", func(e *SuiteEvent) { e.Id = strings.Repeat("h", 3*decode.DefaultMaxBytes/2) }, decode.ReasonTooLarge),
		{Name: "empty value", Key: []byte("u1"), Value: []byte{}, Reason: decode.ReasonEmptyValue},
	}
	if f.Header == nil {
		return append(kinds,
			BadKind{Name: "score +Inf (1e999)", Key: []byte("u1"), Reason: decode.ReasonScoreNotFinite,
				Value: bytes.Replace(JsonEvent(SuiteBase), []byte(`"score":1`), []byte(`"score":1e999`), 1)},
			BadKind{Name: "not JSON", Key: []byte("u1"), Value: []byte("hello"), Reason: decode.ReasonNotJSON})
	}
	other := FrameHeader(protoID, true)
	if f.Name == "protobuf" {
		other = FrameHeader(avroID, false)
	}
	good := f.Encode(SuiteBase.With(func(e *SuiteEvent) { e.Id = "long-enough-id" }))
	return append(kinds,
		bad("NaN score", func(e *SuiteEvent) { e.Score = Num(math.NaN()) }, decode.ReasonScoreNotFinite),
		BadKind{Name: "JSON on a framed topic", Key: []byte("u1"), Value: JsonEvent(SuiteBase), Reason: decode.ReasonNotFramed},
		BadKind{Name: "unknown schema id", Key: []byte("u1"), Value: append(FrameHeader(999, f.Name == "protobuf"), good[len(f.Header):]...), Reason: decode.ReasonUnknownSchema},
		BadKind{Name: "a schema of the other format", Key: []byte("u1"), Value: append(other, good[len(f.Header):]...), Reason: decode.ReasonBadSchema},
		BadKind{Name: "truncated payload", Key: []byte("u1"), Value: good[:len(f.Header)+4], Reason: decode.ReasonSchemaMismatch},
	)
}

// RunFormatSuite sends good events with the bad records kinds between
// them in format f through one worker and checks where each one ended.
func RunFormatSuite(ctx context.Context, t *testing.T, k BrokerKind, prefix string, brokers []string, registryURL string, f SuiteFormat, kinds []BadKind) {
	run := f.Name + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
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
	cfg := FormatSuiteConfig(t, k, brokers, registryURL, f.Name, run, events, passed, rejected, dlq)

	// Good events: "open" passes all, "tight" one an hour; a bad record
	// after every ten good ones.
	var recs []*kgo.Record
	var bad []*BadKind
	add := func(key, value []byte, k *BadKind) {
		recs = append(recs, &kgo.Record{Topic: events, Key: key, Value: value,
			Headers: []kgo.RecordHeader{{Key: "suite-seq", Value: []byte(strconv.Itoa(len(recs)))}}})
		bad = append(bad, k)
	}
	first := f.Encode(SuiteBase.With(func(e *SuiteEvent) { e.Id = "g-dup" }))
	add([]byte("u7"), first, nil)
	kinds = append(kinds, BadKind{Name: "duplicate id", Key: []byte("u7"), Value: first, Reason: pipeline.ReasonDuplicateID})
	goods := 10 * (len(kinds) + 1)
	for i := range goods {
		budget := "open"
		if i%5 == 0 {
			budget = "tight"
		}
		user := fmt.Sprintf("u%d", i%11)
		add([]byte(user), f.Encode(SuiteEvent{Id: fmt.Sprintf("g%d", i), Campaign: Str(budget), User: Str(user),
			Device: Str(fmt.Sprintf("d%d", i%3)), Cost: 1, Score: Num(float64(i % 7)), Ts: 1795341600000}), nil)
		if k := i / 10; i%10 == 5 && k < len(kinds) {
			add(kinds[k].Key, kinds[k].Value, &kinds[k])
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	_, _, stop := RunWorker(ctx, t, cfg, zerolog.WarnLevel)
	WaitCommitted(ctx, t, adm, cfg.Group, events)
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	counts := CheckFormatOutputs(t, ReadCommitted(ctx, t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, passed, rejected, dlq), recs, bad, dlq)
	t.Logf("%s: sent %d good and %d bad records: %v", f.Name, goods+1, len(kinds), counts)
	if counts[dlq] != len(kinds) || counts[passed]+counts[rejected] != goods+1 {
		t.Errorf("counts %v: want %d dead letters and %d outputs", counts, len(kinds), goods+1)
	}
	if counts[rejected] == 0 || counts["tight passed"] > 1 {
		t.Errorf("tight: %d passed, %d rejected in all", counts["tight passed"], counts[rejected])
	}
	CheckPassesCounted(ctx, t, []kgo.Opt{kgo.SeedBrokers(brokers...)}, cfg, events, counts[passed], counts[passed]+counts[rejected])
}

// FormatSuiteConfig returns the worker's configuration of the suite:
// the JSON suite's, reading format through the registry.
func FormatSuiteConfig(t *testing.T, k BrokerKind, brokers []string, registryURL, format, run, events, passed, rejected, dlq string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(SuiteYAML(brokers, "fmt-"+run, events, passed, rejected, dlq,
		fmt.Sprintf("format: {input: %s}\nschema_registry: {urls: [%q]}\n", format, registryURL)+k.GroupYAML(GroupTimeouts{})))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// CheckFormatOutputs checks that every record sent is in exactly one
// output topic, a bad one in dlq with its reason and source, a good one
// with its value unchanged; it returns the count per topic, and of the
// tight budget's passes.
func CheckFormatOutputs(t *testing.T, got, sent []*kgo.Record, bad []*BadKind, dlq string) map[string]int {
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
			t.Errorf("record %d (%v) is nowhere", seq, KindName(k))
			continue
		case k != nil:
			reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason)
			src, _ := pipeline.HeaderValue(r, pipeline.HeaderSourceTopic)
			if r.Topic != dlq || reason != string(k.Reason) || src != s.Topic {
				msg, _ := pipeline.HeaderValue(r, pipeline.HeaderError)
				t.Errorf("%s: in %s with reason %q (%s), want %s with %q", k.Name, r.Topic, reason, msg, dlq, k.Reason)
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
