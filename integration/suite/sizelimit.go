package suite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
	"github.com/throttler/throttler/pipeline"
)

func RunRecordsAtTheSizeLimit(t *testing.T, k BrokerKind) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := SharedCluster(t, k, 1)
	name := b.Name
	events, passed, rejected, dlq := name("events"), name("passed"), name("rejected"), name("dlq")
	CreateTopic(ctx, t, b.Addr, events, 1, nil) // the broker's default max.message.bytes
	// Uncompressed batches of one record: the broker's limit applies to
	// the batch as sent.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkabroker.Seeds(b.Addr)...), kgo.ProducerBatchMaxBytes(8<<20), // the broker decides
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// event returns an event whose value is n bytes long, padded with
	// letters that do not compress (the worker's producer compresses).
	rng := rand.New(rand.NewPCG(1, 2))
	event := func(id string, n int) []byte {
		v := fmt.Appendf(nil, `{"id":%q,"campaign":"open","user":"u1","device":"d1","cost":1,"score":1,"ts":1795341600000,"pad":"`, id)
		for len(v) < n-2 {
			v = append(v, byte('a'+rng.IntN(26)))
		}
		return append(v, '"', '}')
	}
	headers := []kgo.RecordHeader{{Key: "trace", Value: []byte(strings.Repeat("t", decode.MaxKeyAndHeaderBytes-len("trace")-len("u1")-16))}}
	// The largest value the topic takes: KiB steps down from the limit,
	// then a bisection (each probe taken is one more input record).
	takes := func(n int) bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: events, Key: []byte("u1"), Value: event("probe", n), Headers: headers}).FirstErr() == nil
	}
	largest, refused := 0, 1_048_588+1
	for n := 1_048_588; n > decode.DefaultMaxBytes; n -= 1024 {
		if takes(n) {
			largest = n
			break
		}
		refused = n
	}
	if largest == 0 {
		t.Fatal("the input topic took no value over the decoder's maximum")
	}
	for refused-largest > 1 {
		if n := (largest + refused) / 2; takes(n) {
			largest = n
		} else {
			refused = n
		}
	}
	t.Logf("%s: the largest value an input topic of the default max.message.bytes takes with %d bytes of headers: %d bytes",
		k.Name, len(headers[0].Value), largest)
	sent := map[string]int{"at-max": decode.DefaultMaxBytes, "over-max": decode.DefaultMaxBytes + 1, "largest": largest}
	for id, n := range sent {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: events, Key: []byte("u1"), Value: event(id, n), Headers: headers}).FirstErr(); err != nil {
			t.Fatalf("producing %s (%d bytes): %v", id, n, err)
		}
	}

	now := time.Now()
	cfg, err := config.Parse(fmt.Appendf(nil, `brokers: [%s]
group: %s
topics: {input: [%s], output: %s, rejected: %s, dead_letter: %s}
fields: {budget: campaign, key: user, id: id, score: score, time: ts}
budgets:
  - {name: open, target: 1e9, begin: %s, end: %s}
http: {listen: "127.0.0.1:0"}
%s`, b.Addr, name("size"), events, passed, rejected, dlq,
		now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), k.GroupYAML(GroupTimeouts{})))
	if err != nil {
		t.Fatal(err)
	}
	_, _, stop := RunWorker(ctx, t, cfg, zerolog.WarnLevel)
	WaitCommitted(ctx, t, kadm.NewClient(cl), cfg.Group, events)
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	where := map[string]*kgo.Record{}
	for _, r := range ReadCommitted(ctx, t, []kgo.Opt{kgo.SeedBrokers(kafkabroker.Seeds(b.Addr)...)}, passed, rejected, dlq) {
		id := JsonField(r.Value, "id")
		if r.Topic == dlq {
			id, _ = pipeline.HeaderValue(r, pipeline.HeaderSourceOffset)
			id = "offset " + id
		}
		if _, dup := where[id]; dup {
			t.Errorf("%s twice", id)
		}
		where[id] = r
	}
	if r := where["at-max"]; r == nil || r.Topic != passed || len(r.Value) != decode.DefaultMaxBytes {
		t.Errorf("the event at the decoder's maximum: %v, want it passed unchanged", Describe(r))
	} else {
		size := len(r.Value) + len(r.Key)
		for _, h := range r.Headers {
			size += len(h.Key) + len(h.Value)
		}
		t.Logf("%s: the output of the event at the maximum: %d bytes of value, key and headers", k.Name, size)
	}
	// Every other input record, probes included, is too large: its dead
	// letter is cut to fit and names the source's size.
	dead := 0
	for id, r := range where {
		if !strings.HasPrefix(id, "offset ") {
			continue
		}
		dead++
		reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason)
		size, _ := pipeline.HeaderValue(r, pipeline.HeaderOriginalSize)
		n, _ := strconv.Atoi(size)
		if reason != string(decode.ReasonTooLarge) || len(r.Value) > decode.DefaultMaxBytes || n <= decode.DefaultMaxBytes {
			t.Errorf("dead letter of %s: reason %q, %d bytes, original size %q", id, reason, len(r.Value), size)
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, events)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(events, 0)
	if dead+1 != int(end.Offset) {
		t.Errorf("%d dead letters and 1 pass for %d input records", dead, end.Offset)
	}
	t.Logf("%s: %d input records up to %d bytes: 1 passed, %d dead-lettered as too large", k.Name, end.Offset, largest, dead)
}

// Describe says where a record is, for a failure's message.
func Describe(r *kgo.Record) string {
	if r == nil {
		return "nowhere"
	}
	return fmt.Sprintf("in %s with %d bytes", r.Topic, len(r.Value))
}
