package consumer

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/stats"
)

// ledgers loads the committed ledger of every source from the stats topic
// "stats".
func (env *testEnv) ledgers() map[string]stats.LedgerState {
	env.t.Helper()
	return env.ledgersOf("stats")
}

// ledgersOf loads the committed ledger of every source from a stats topic.
func (env *testEnv) ledgersOf(topic string) map[string]stats.LedgerState {
	env.t.Helper()
	var sources []string
	for p := int32(0); p < inputPartitions; p++ {
		sources = append(sources, stats.SourceName("events", p))
	}
	for p := int32(0); p < 4; p++ {
		sources = append(sources, stats.SourceName("clicks", p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	states, err := stats.LoadLedgers(ctx, []kgo.Opt{kgo.SeedBrokers(env.addrs...)}, topic, sources...)
	if err != nil {
		env.t.Fatal(err)
	}
	return states
}
