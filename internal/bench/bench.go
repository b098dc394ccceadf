// Package bench measures the worker pipeline against a raw franz-go
// consume→produce passthrough on the same embedded broker: `throttler
// bench`.
//
// Both sides read the same pre-produced input topic with the same client
// settings, the same delivery mode (a kgo.GroupTransactSession with
// read_committed for exactly-once; flush then commit offsets for
// at-least-once) and the same commit cadence (every
// consumer.DefaultCommitInterval or consumer.DefaultCommitRecords polled
// records, polls of consumer.DefaultMaxPollRecords). Rounds alternate,
// passthrough first, each with a fresh consumer group and fresh output
// topics. A round's rate is measured the same way on both sides, by an
// observer that polls the group's committed offsets: records committed
// after the group's first commit, over the time from that commit to the
// commit of the last record. Group joining and start-up are thereby left
// out of both.
//
// The pipeline's configuration: events from internal/loadgen in
// Config.Format (Avro and Protobuf framed for a schema registry in the
// process, whose schema the worker fetches once; the passthrough copies the
// same bytes), fields budget=campaign, key=user, id=id, time=ts; Budgets
// unscored window budgets (one, "a", by default; else a loadgen spread
// "b-0…" drawn by Zipf rank with exponent Skew, or uniformly with Skew 0),
// each paced to pass about half of its events at the expected rate (see
// newPipeline); rejected events go to a rejected topic (unless
// DropRejected), so that the pipeline, like the passthrough, produces a
// record for every input record: the fair comparison, and the default; no
// experiments; a sync interval of 100ms.
//
// With Config.DecodeReference every round also runs, after the
// passthrough, the decode reference: the passthrough that decodes every
// record with the pipeline's decoder (a poll's records in parallel, on
// GOMAXPROCS goroutines) before it copies it. The pipeline
// decodes every event too, so the decode reference's rate is about the
// most any pipeline with this decoder can reach on the machine, and
// DecodeRatio tells how much of the gap to the passthrough is decoding.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/broker"
	"github.com/throttler/throttler/internal/loadgen"
)

// Defaults of Config.
const (
	DefaultRecords    = 1_000_000
	DefaultRounds     = 3
	DefaultPartitions = 12
	// roundTimeout bounds one round.
	roundTimeout = 5 * time.Minute
	// observeEvery is the period of the committed-offsets observer.
	observeEvery = 5 * time.Millisecond
)

// ErrConfig is wrapped by the error Run returns for an invalid Config.
var ErrConfig = errors.New("invalid bench config")

// Config says what to measure.
type Config struct {
	// Records is the number of input records. Default DefaultRecords.
	Records int
	// Delivery is the delivery mode of both sides. Default exactly-once.
	Delivery consumer.Delivery
	// Rounds is the number of rounds of each side. Default DefaultRounds.
	Rounds int
	// Partitions of the input and output topics. Default
	// DefaultPartitions.
	Partitions int32
	// DataDir is the embedded broker's data directory. Default: a
	// temporary directory, removed at the end (records kept in memory with
	// no retention would grow the broker and slow it down round after
	// round).
	DataDir string
	// Brokers, when set, are the seed brokers (host:port, plaintext) of a
	// cluster to run on instead of the embedded broker. The run's topics
	// and groups are named bench-<run id>-…, and its topics are deleted at
	// the end.
	Brokers []string
	// DropRejected makes the pipeline drop rejected events (counted, not
	// produced), as `throttler bench` did before it had a rejected topic:
	// the pipeline then produces only the passed half of what the
	// passthrough does. Default false: every record is produced somewhere.
	DropRejected bool
	// Budgets is the number of budgets over the input. Default 1.
	Budgets int
	// Skew is the Zipf exponent (> 1) of the budgets' ranks, or 0 for a
	// uniform draw; used with Budgets > 1. Default 0 (a Config built in
	// code); `throttler bench` passes loadgen.DefaultSkew.
	Skew float64
	// DecodeReference adds a third side to every round, after the
	// passthrough: the passthrough that also decodes every record with the
	// pipeline's decoder (each poll's records on GOMAXPROCS goroutines,
	// then copied). It measures what decoding alone costs, in the same
	// run: Result.DecodeRPS and DecodeRatio.
	DecodeReference bool
	// CPUProfile, when set, receives a CPU profile of the last pipeline
	// round.
	CPUProfile io.Writer
	// PassthroughProfile, when set, receives a CPU profile of the last
	// passthrough round (to compare like with like).
	PassthroughProfile io.Writer
	// Log receives progress at info level. Default: none.
	Log zerolog.Logger
	// Format of the input: json, avro or protobuf (through a schema
	// registry in the process). Default json.
	Format string
}

// Round is one measured round.
type Round struct {
	Side    string  `json:"side"` // "pipeline", "passthrough" or "decode"
	RPS     float64 `json:"rps"`
	Seconds float64 `json:"seconds"`
	// CPUMicros is the CPU time of the whole process (broker included)
	// per record, from the start of the side to its end, in µs.
	CPUMicros float64 `json:"cpu_us_per_record"`
	// Passed is the fraction of records the pipeline passed (pipeline
	// rounds only).
	Passed float64 `json:"passed,omitempty"`
	// DeadLetters counts the records the pipeline dead-lettered (none
	// expected: every record is good).
	DeadLetters float64 `json:"dead_letters,omitempty"`
	// Produced is the fraction of records the pipeline produced to a
	// topic (passed, rejected when the rejected topic is on, dead
	// letters); pipeline rounds only.
	Produced float64 `json:"produced,omitempty"`
}

// Result is what Run measured. PipelineRPS and PassthroughRPS are the
// medians of the rounds of each side; Ratio is their quotient.
type Result struct {
	Records        int     `json:"records"`
	Delivery       string  `json:"delivery"`
	Format         string  `json:"format"`
	PipelineRPS    float64 `json:"pipeline_rps"`
	PassthroughRPS float64 `json:"passthrough_rps"`
	Ratio          float64 `json:"ratio"`
	Rounds         []Round `json:"rounds"`
	// RejectedTopic says whether the pipeline produced its rejected
	// events (Config.DropRejected false); Budgets and Skew are Config's.
	RejectedTopic bool    `json:"rejected_topic"`
	Budgets       int     `json:"budgets"`
	Skew          float64 `json:"budget_skew"`
	// DecodeRPS is the median of the decode reference's rounds, and
	// DecodeRatio its quotient by PassthroughRPS (Config.DecodeReference;
	// else 0).
	DecodeRPS   float64 `json:"decode_rps,omitempty"`
	DecodeRatio float64 `json:"decode_ratio,omitempty"`
}

const (
	budgetName   = "a"
	syncInterval = 100 * time.Millisecond
)

// defaults fills in the zero fields and checks the others.
func (c *Config) defaults() error {
	if c.Records == 0 {
		c.Records = DefaultRecords
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Budgets == 0 {
		c.Budgets = 1
	}
	switch {
	case c.Records < 1:
		return fmt.Errorf("%w: records must be at least 1, got %d", ErrConfig, c.Records)
	case c.Rounds < 1:
		return fmt.Errorf("%w: rounds must be at least 1, got %d", ErrConfig, c.Rounds)
	case c.Partitions < 1:
		return fmt.Errorf("%w: partitions must be at least 1, got %d", ErrConfig, c.Partitions)
	case c.Budgets < 1:
		return fmt.Errorf("%w: budgets must be at least 1, got %d", ErrConfig, c.Budgets)
	case c.Skew != 0 && !(c.Skew > 1) || math.IsInf(c.Skew, 0):
		return fmt.Errorf("%w: skew must be 0 (uniform) or above 1, got %v", ErrConfig, c.Skew)
	case c.Delivery > consumer.AtLeastOnce:
		return fmt.Errorf("%w: unknown delivery", ErrConfig)
	}
	if _, err := decode.ParseFormat(c.Format); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// Run starts an embedded broker on a free loopback port (or uses
// c.Brokers), produces the input once, then runs the rounds and returns
// their medians.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.defaults(); err != nil {
		return Result{}, err
	}
	r := &runner{c: c, prefix: "bench-", addrs: c.Brokers}
	if len(c.Brokers) > 0 {
		r.prefix = "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	} else {
		if c.DataDir == "" {
			dir, err := os.MkdirTemp("", "throttler-bench-")
			if err != nil {
				return Result{}, err
			}
			defer os.RemoveAll(dir)
			c.DataDir = dir
		}
		b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.DataDir(c.DataDir), broker.Partitions(c.Partitions))
		if err != nil {
			return Result{}, err
		}
		defer b.Close()
		r.addrs = b.Addrs()
	}
	stopFormat, err := r.setupFormat(ctx)
	defer stopFormat()
	if err != nil {
		return Result{}, err
	}
	if r.admCl, err = kgo.NewClient(kgo.SeedBrokers(r.addrs...)); err != nil {
		return Result{}, err
	}
	defer r.admCl.Close()
	r.adm = kadm.NewClient(r.admCl)
	if len(c.Brokers) > 0 {
		defer r.deleteTopics()
	}
	if err := r.createTopics(ctx, r.input()); err != nil {
		return Result{}, err
	}
	if err := r.produceInput(ctx); err != nil {
		return Result{}, err
	}

	res := Result{Records: c.Records, Delivery: c.Delivery.String(), Format: r.enc.Format(), RejectedTopic: !c.DropRejected, Budgets: c.Budgets, Skew: c.Skew}
	// ref decodes in the decode reference's rounds; the budgets' targets
	// do not matter to it.
	var ref *decode.Decoder
	if c.DecodeReference {
		if ref, err = newDecoder(c.budgets(time.Now(), 1), r.decOpts...); err != nil {
			return res, err
		}
	}
	// round runs one round of side under roundTimeout and keeps it.
	round := func(i int, side string, run func(context.Context) (Round, error)) (Round, error) {
		rctx, cancel := context.WithTimeout(ctx, roundTimeout)
		defer cancel()
		rd, err := run(rctx)
		if err != nil {
			return rd, fmt.Errorf("%s round %d: %w", side, i+1, err)
		}
		res.Rounds = append(res.Rounds, rd)
		ev := c.Log.Info().Int("round", i+1).Float64("rps", rd.RPS)
		if side == "pipeline" {
			ev = ev.Float64("passed", rd.Passed)
		}
		ev.Msg(side)
		return rd, nil
	}
	// last returns w in the last round, nil before.
	last := func(i int, w io.Writer) io.Writer {
		if i == c.Rounds-1 {
			return w
		}
		return nil
	}
	var pipe, pass, dec []float64
	for i := range c.Rounds {
		pt, err := round(i, "passthrough", func(ctx context.Context) (Round, error) {
			return r.passthroughRound(ctx, i, last(i, c.PassthroughProfile), nil)
		})
		if err != nil {
			return res, err
		}
		pass = append(pass, pt.RPS)
		if ref != nil {
			dr, err := round(i, "decode", func(ctx context.Context) (Round, error) {
				return r.passthroughRound(ctx, i, nil, ref)
			})
			if err != nil {
				return res, err
			}
			dec = append(dec, dr.RPS)
		}

		// The budget passes half of the expected rate: the previous
		// pipeline round's, or at first 0.8 of the passthrough's.
		expect := 0.8 * pt.RPS
		if len(pipe) > 0 {
			expect = pipe[len(pipe)-1]
		}
		pl, err := round(i, "pipeline", func(ctx context.Context) (Round, error) {
			return r.pipelineRound(ctx, i, expect, last(i, c.CPUProfile))
		})
		if err != nil {
			return res, err
		}
		pipe = append(pipe, pl.RPS)
	}
	res.PipelineRPS = median(pipe)
	res.PassthroughRPS = median(pass)
	res.DecodeRPS = median(dec)
	if res.PassthroughRPS > 0 {
		res.Ratio = res.PipelineRPS / res.PassthroughRPS
		res.DecodeRatio = res.DecodeRPS / res.PassthroughRPS
	}
	return res, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

type runner struct {
	c       Config
	prefix  string // of the run's topics and groups
	addrs   []string
	admCl   *kgo.Client
	adm     *kadm.Client
	enc     loadgen.Encoder    // of the input's format
	decOpts []decode.DecodeOpt // the pipeline decoder's of the format
}

// clientOpts are the connection settings of both sides. The worker puts
// consumer.ClientTuning before them; so does the passthrough.
func (r *runner) clientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(r.addrs...)}
}

func (r *runner) produceInput(ctx context.Context) error {
	g, err := loadgen.New(r.c.generator())
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addrs...), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	t0 := time.Now()
	sum, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{Topic: r.input(), Count: uint64(r.c.Records), Encoder: r.enc})
	if err != nil {
		return fmt.Errorf("produce input: %w", err)
	}
	if sum.Produced != uint64(r.c.Records) {
		return fmt.Errorf("produce input: %d of %d records acknowledged", sum.Produced, r.c.Records)
	}
	r.c.Log.Info().Int("records", r.c.Records).Dur("took", time.Since(t0)).Msg("input produced")
	return nil
}

// createTopics creates topics with the input's partition count.
func (r *runner) createTopics(ctx context.Context, topics ...string) error {
	return broker.CreateTopics(ctx, r.adm, r.c.Partitions, nil, topics...)
}

// name returns the name of the run's topic or group s.
func (r *runner) name(s string) string { return r.prefix + s }

// input is the input topic.
func (r *runner) input() string { return r.name("in") }

// deleteTopics deletes the topics the run created, and those the
// pipeline's workers created (stats and checkpoints), from a cluster the
// run does not own; a failure is logged.
func (r *runner) deleteTopics() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topics, err := r.adm.ListTopics(ctx)
	if err == nil {
		var mine []string
		for _, t := range topics.Names() {
			if strings.HasPrefix(t, r.prefix) {
				mine = append(mine, t)
			}
		}
		if len(mine) > 0 {
			_, err = r.adm.DeleteTopics(ctx, mine...)
		}
	}
	if err != nil {
		r.c.Log.Warn().Err(err).Str("prefix", r.prefix).Msg("deleting the run's topics")
	}
}

// observe polls group's committed offsets of the input until they reach
// Records, and returns the rate from the group's first commit to the last
// (from start when the first commit it sees is the last).
func (r *runner) observe(ctx context.Context, group string, start time.Time, failed <-chan error) (rps, secs float64, err error) {
	want := int64(r.c.Records)
	var t0 time.Time
	var c0 int64
	tick := time.NewTicker(observeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("waiting for commits: %w", ctx.Err())
		case err := <-failed:
			if err == nil {
				err = errors.New("stopped before committing every record")
			}
			return 0, 0, err
		case <-tick.C:
		}
		offs, err := r.adm.FetchOffsets(ctx, group)
		if err != nil {
			continue
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == r.input() && o.Err == nil && o.At > 0 {
				sum += o.At
			}
		})
		now := time.Now()
		if sum > 0 && t0.IsZero() {
			t0, c0 = now, sum
		}
		if sum >= want {
			if sum == c0 {
				// Everything in the first commit seen (a tiny run): fall
				// back to the time since the side started.
				t0, c0 = start, 0
			}
			d := now.Sub(t0).Seconds()
			return float64(sum-c0) / d, d, nil
		}
	}
}

// runSide runs side until the observer has seen every record committed,
// then stops it.
func (r *runner) runSide(ctx context.Context, group string, side func(context.Context) error) (rps, secs, cpu float64, err error) {
	sctx, stop := context.WithCancel(ctx)
	failed := make(chan error, 1)
	start := time.Now()
	cpu0 := cpuTime()
	go func() { failed <- side(sctx) }()
	rps, secs, err = r.observe(ctx, group, start, failed)
	cpu = (cpuTime() - cpu0).Seconds() * 1e6 / float64(r.c.Records)
	stop()
	if err != nil {
		return 0, 0, 0, err
	}
	if serr := <-failed; serr != nil {
		return 0, 0, 0, serr
	}
	return rps, secs, cpu, nil
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// passthroughRound runs round i of the passthrough, or with dec of the
// decode reference.
func (r *runner) passthroughRound(ctx context.Context, i int, prof io.Writer, dec *decode.Decoder) (Round, error) {
	side, prefix := "passthrough", r.name("pt-")
	if dec != nil {
		side, prefix = "decode", r.name("dec-")
	}
	out := prefix + "out-" + strconv.Itoa(i)
	group := prefix + strconv.Itoa(i)
	if err := r.createTopics(ctx, out); err != nil {
		return Round{}, err
	}
	p := passthrough{
		opts:     r.clientOpts(),
		group:    group,
		input:    r.input(),
		output:   out,
		delivery: r.c.Delivery,
		txnID:    group + "-txn",
		log:      r.c.Log,
		dec:      dec,
	}
	stop, err := startProfile(prof)
	if err != nil {
		return Round{}, err
	}
	rps, secs, cpu, err := r.runSide(ctx, group, p.run)
	stop()
	return Round{Side: side, RPS: rps, Seconds: secs, CPUMicros: cpu}, err
}
