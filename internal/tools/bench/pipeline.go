package bench

import (
	"context"
	"io"
	"runtime/pprof"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// pipelineRound runs round i of a pipeline side: the pipeline of c (its
// budgets; Budgets 1 reads the one-budget input when it is not the main
// side) at the expected rate expectRPS.
func (r *runner) pipelineRound(ctx context.Context, i int, side string, c Config, expectRPS float64, prof io.Writer) (Round, error) {
	what, input := "pl", r.input()
	if side == sideOneBudget {
		what, input = "one", r.inputOne()
	}
	group := r.name(what, i)
	topics := consumer.Topics{
		Input:      []string{input},
		Output:     r.name(what+"-out", i),
		DeadLetter: r.name(what+"-dlq", i),
		Stats:      r.name(what+"-stats", i),
	}
	create := []string{topics.Output, topics.DeadLetter}
	if !c.DropRejected {
		topics.Rejected = r.name(what+"-rej", i)
		create = append(create, topics.Rejected)
	}
	if err := r.createTopics(ctx, create...); err != nil {
		return Round{}, err
	}
	defer r.cleanup(group, append(create, topics.Stats)...)
	w, err := newPipeline(r.clientOpts(), group, topics, c, time.Now(), expectRPS, r.decOpts...)
	if err != nil {
		return Round{}, err
	}
	stop, err := startProfile(prof)
	if err != nil {
		return Round{}, err
	}
	rd, err := r.runSide(ctx, side, group, input, processCPU, w.Run)
	stop()
	if err != nil {
		return Round{}, err
	}
	logCommits(c.Log, w)
	pass, produced := outcomes(w, !c.DropRejected)
	rd.Passed = pass / float64(c.Records)
	rd.Produced = produced / float64(c.Records)
	rd.DeadLetters = counter(w, "throttler_dead_lettered_total")
	return rd, nil
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
// the flow controller is set to settle quickly: a sync interval of
// c.SyncInterval, 100ms by default (its own rate is measured over one),
// and the lag behind the ideal curve
// made up over the whole window rather than over three sync intervals
// (the start-up time of the worker counts as lag, which would otherwise
// make it pass nearly everything).
func newPipeline(opts []kgo.Opt, group string, topics consumer.Topics, c Config, now time.Time, expectRPS float64, decOpts ...decode.Opt) (*consumer.Worker, error) {
	budgets := c.budgets(now, expectRPS)
	tree, err := flow.NewTree(budgets, flow.Acceleration(time.Hour), flow.SyncInterval(c.SyncInterval))
	if err != nil {
		return nil, err
	}
	dec, err := newDecoder(decOpts...)
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
		consumer.SyncInterval(c.SyncInterval),
	)
}

// newDecoder returns the pipeline's decoder of the load generator's events.
func newDecoder(decOpts ...decode.Opt) (*decode.Decoder, error) {
	return decode.NewDecoder(append([]decode.Opt{
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
