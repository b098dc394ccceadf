package consumer

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
)

// The worker's clients refresh metadata at most every MetadataMinAge
// (kgo's 5 s held a worker's transaction that long after a broker
// restart), unless the caller's client options say otherwise. No broker
// is needed: a client connects only when it first sends a request.
func TestMetadataMinAge(t *testing.T) {
	tree, err := flow.NewTree(testBudgetsFlow(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := decode.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	topics := WithTopics(Topics{Input: []string{"events"}, Output: "out", DeadLetter: "dlq", Stats: "stats"})
	for _, c := range []struct {
		name string
		opts []kgo.Opt
		want time.Duration
	}{
		{"default", nil, MetadataMinAge},
		{"caller's", []kgo.Opt{kgo.MetadataMinAge(2 * time.Second)}, 2 * time.Second},
	} {
		w, err := NewWorker(tree, dec, topics, ClientOpts(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, c.opts...)...))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(w.ClientOpts()...)
		if err != nil {
			t.Fatal(err)
		}
		got := cl.OptValue(kgo.MetadataMinAge)
		cl.Close()
		if got != c.want {
			t.Errorf("%s: the worker's clients refresh metadata at most every %v, want %v", c.name, got, c.want)
		}
	}
}

func TestViewFetchMaxWait(t *testing.T) {
	for sync, want := range map[time.Duration]time.Duration{
		DefaultSyncInterval: 500 * time.Millisecond, 5 * time.Second: 500 * time.Millisecond,
		200 * time.Millisecond: 100 * time.Millisecond, 10 * time.Millisecond: 10 * time.Millisecond,
	} {
		if got := viewFetchMaxWait(sync); got != want {
			t.Errorf("viewFetchMaxWait(%v) = %v, want %v", sync, got, want)
		}
	}
}
