package bench

import (
	"context"
	"io"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/loadgen"
)

func (r *runner) pipelineRound(ctx context.Context, i int, expectRPS float64, prof io.Writer) (Round, error) {
	n := strconv.Itoa(i)
	group := r.name("pl-" + n)
	topics := consumer.Topics{
		Input:       []string{r.input()},
		Output:      r.name("pl-out-" + n),
		DeadLetter:  r.name("pl-dlq-" + n),
		Stats:       r.name("pl-stats-" + n),
		Checkpoints: r.name("pl-ckpt-" + n),
	}
	create := []string{topics.Output, topics.DeadLetter}
	if !r.c.DropRejected {
		topics.Rejected = r.name("pl-rej-" + n)
		create = append(create, topics.Rejected)
	}
	if err := r.createTopics(ctx, create...); err != nil {
		return Round{}, err
	}
	w, err := newPipeline(r.clientOpts(), group, topics, r.c, time.Now(), expectRPS, r.decOpts...)
	if err != nil {
		return Round{}, err
	}
	stop, err := startProfile(prof)
	if err != nil {
		return Round{}, err
	}
	rps, secs, cpu, err := r.runSide(ctx, group, w.Run)
	stop()
	if err != nil {
		return Round{}, err
	}
	logCommits(r.c.Log, w)
	pass, produced := outcomes(w, !r.c.DropRejected)
	return Round{Side: "pipeline", RPS: rps, Seconds: secs, CPUMicros: cpu, Passed: pass / float64(r.c.Records),
		Produced: produced / float64(r.c.Records), DeadLetters: counter(w, "throttler_dead_lettered_total")}, nil
}

// startProfile starts a CPU profile to prof, if not nil; stop ends it.
func startProfile(prof io.Writer) (stop func(), err error) {
	if prof == nil {
		return func() {}, nil
	}
	if err := pprof.StartCPUProfile(prof); err != nil {
		return func() {}, err
	}
	return pprof.StopCPUProfile, nil
}

// generator returns the load generator of the input: one budget "a", or
// Budgets budgets "b-…" drawn by rank.
func (c *Config) generator() loadgen.Config {
	if c.Budgets <= 1 {
		return loadgen.Config{Seed: 1, Budgets: []loadgen.Budget{{Name: budgetName, Weight: 1}}}
	}
	return loadgen.Config{Seed: 1, Spread: loadgen.Spread{Count: c.Budgets, Prefix: spreadPrefix, Skew: c.Skew}}
}

// spreadPrefix names the budgets of a bench of several.
const spreadPrefix = "b-"

// budgets returns the pipeline's budgets: each an unscored window from
// now, for an hour, whose target is half its share of expectRPS per
// second (the shares of generator's draw).
func (c *Config) budgets(now time.Time, expectRPS float64) []flow.Budget {
	const window = time.Hour
	mk := func(name string, share float64) flow.Budget {
		return flow.Budget{Name: name, Target: max(share*expectRPS/2*window.Seconds(), 1), Begin: now, End: now.Add(window)}
	}
	if c.Budgets <= 1 {
		return []flow.Budget{mk(budgetName, 1)}
	}
	out := make([]flow.Budget, c.Budgets)
	for k, share := range loadgen.SpreadShares(c.Budgets, c.Skew) {
		out[k] = mk(loadgen.SpreadName(spreadPrefix, k, c.Budgets), share)
	}
	return out
}

// logCommits logs, at debug level, the worker's commit count and time by
// phase.
func logCommits(log zerolog.Logger, w *consumer.Worker) {
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "throttler_commit_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			log.Debug().Str("phase", m.GetLabel()[0].GetValue()).Uint64("commits", h.GetSampleCount()).
				Float64("seconds", h.GetSampleSum()).Msg("pipeline commit time")
		}
	}
}

// newPipeline returns the worker of a pipeline round: c's budgets
// (Config.budgets), each a window of an hour from now whose target is half
// of its share of expectRPS per second. The run lasts a second or two, so
// the flow controller is set to settle quickly: a sync interval of 100ms
// (its own rate is measured over one), and the lag behind the ideal curve
// made up over the whole window rather than over three sync intervals
// (the start-up time of the worker counts as lag, which would otherwise
// make it pass nearly everything).
func newPipeline(opts []kgo.Opt, group string, topics consumer.Topics, c Config, now time.Time, expectRPS float64, decOpts ...decode.DecodeOpt) (*consumer.Worker, error) {
	budgets := c.budgets(now, expectRPS)
	tree, err := flow.NewTree(budgets, flow.Acceleration(time.Hour), flow.SyncInterval(syncInterval))
	if err != nil {
		return nil, err
	}
	dec, err := newDecoder(budgets, decOpts...)
	if err != nil {
		return nil, err
	}
	return consumer.NewWorker(tree, dec,
		consumer.ClientOpts(opts...),
		consumer.Group(group),
		consumer.WithTopics(topics),
		consumer.WithDelivery(c.Delivery),
		consumer.TransactionalID(group+"-txn"),
		consumer.WithLogger(c.Log),
		consumer.SyncInterval(syncInterval),
	)
}

// newDecoder returns the pipeline's decoder of budgets' events.
func newDecoder(budgets []flow.Budget, decOpts ...decode.DecodeOpt) (*decode.Decoder, error) {
	names := make([]string, len(budgets))
	for i, b := range budgets {
		names[i] = b.Name
	}
	return decode.NewDecoder(names, append([]decode.DecodeOpt{
		decode.BudgetPath("campaign"), decode.KeyPath("user"), decode.IDPath("id"), decode.TimePath("ts")}, decOpts...)...)
}

// outcomes returns the worker's passed events and the records it
// produced: passed, rejected when rejected events are produced, and dead
// letters (from throttler_passed_total, throttler_rejected_total and
// throttler_dead_lettered_total).
func outcomes(w *consumer.Worker, rejectedProduced bool) (passed, produced float64) {
	passed = counter(w, "throttler_passed_total")
	produced = passed + counter(w, "throttler_dead_lettered_total")
	if rejectedProduced {
		produced += counter(w, "throttler_rejected_total")
	}
	return passed, produced
}

// counter returns the sum of the worker's counter name.
func counter(w *consumer.Worker, name string) float64 {
	mfs, err := w.Gatherer().Gather()
	if err != nil {
		return 0
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
