package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/tools/broker"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

const (
	budgetName = "a"
	// cleanupTimeout bounds the deletion of a round's topics and group.
	cleanupTimeout = 30 * time.Second
)

// Run produces the input once, on an embedded broker or on c.Brokers,
// then runs the rounds and returns their medians.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.defaults(); err != nil {
		return Result{}, err
	}
	res := Result{Records: c.Records, Delivery: c.Delivery.String(), RejectedTopic: !c.DropRejected,
		Budgets: c.Budgets, Skew: c.Skew, SyncInterval: c.SyncInterval.String(), Broker: "external"}
	if l, ok := loadAverage(); ok {
		res.LoadAverage = []float64{l}
	}
	r := &runner{c: c, addrs: c.Brokers, prefix: runPrefix()}
	if len(c.Brokers) == 0 {
		res.Broker, res.BrokerInProcess = "embedded", true
		if c.DataDir == "" {
			dir, err := os.MkdirTemp("", "throttler-bench-")
			if err != nil {
				return res, err
			}
			defer os.RemoveAll(dir)
			c.DataDir = dir
		}
		b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.DataDir(c.DataDir), broker.Partitions(c.Partitions))
		if err != nil {
			return res, err
		}
		defer b.Close()
		r.addrs = b.Addrs()
	}
	if c.StreamsReference {
		s, skip, err := startStreams(ctx, c, r.addrs)
		if err != nil {
			return res, err
		}
		if skip != "" {
			c.Log.Warn().Str("reason", skip).Msg("the Kafka Streams reference is skipped")
			res.StreamsSkipped = skip
		} else {
			defer s.close()
			r.streams = s
			res.StreamsGuarantee, res.StreamsThreads, res.StreamsWarmup = s.guarantee, s.threads, c.StreamsWarmup
		}
	}
	stopFormat, err := r.setupFormat(ctx)
	defer stopFormat()
	if err != nil {
		return res, err
	}
	res.Format = r.enc.Format()
	if r.admCl, err = kgo.NewClient(kgo.SeedBrokers(r.addrs...)); err != nil {
		return res, err
	}
	defer r.admCl.Close()
	r.adm = kadm.NewClient(r.admCl)
	defer r.deleteInputs()
	if err := r.produceInput(ctx, r.input(), c.generator()); err != nil {
		return res, err
	}
	if c.OneBudgetReference {
		one := c
		one.Budgets = 1
		if err := r.produceInput(ctx, r.inputOne(), one.generator()); err != nil {
			return res, err
		}
	}
	err = r.rounds(ctx, &res)
	res.summarize()
	if l, ok := loadAverage(); ok && len(res.LoadAverage) == 1 {
		res.LoadAverage = append(res.LoadAverage, l)
	}
	return res, err
}

// runPrefix returns the prefix of a run's topics, groups and
// transactional ids: "bench-" and 8 random hex digits.
func runPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b) + "-"
}

type runner struct {
	c       Config
	addrs   []string
	prefix  string
	admCl   *kgo.Client
	adm     *kadm.Client
	enc     loadgen.Encoder // of the input's format
	decOpts []decode.Opt    // the pipeline decoder's of the format
	streams *streamsJVM     // nil: no Streams side
	inputs  []string        // created, deleted at the end
}

func (r *runner) input() string    { return r.prefix + "in" }
func (r *runner) inputOne() string { return r.prefix + "in-1" }

// name returns the run's name of a side's topic or group in round i.
func (r *runner) name(what string, i int) string { return r.prefix + what + "-" + strconv.Itoa(i) }

// clientOpts are the connection settings of the Go sides. The worker puts
// consumer.ClientTuning before them; so does the passthrough.
func (r *runner) clientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(r.addrs...)}
}

// produceInput creates topic and produces c.Records events of gen to it.
func (r *runner) produceInput(ctx context.Context, topic string, gen loadgen.Config) error {
	if err := r.createTopics(ctx, topic); err != nil {
		return err
	}
	r.inputs = append(r.inputs, topic)
	g, err := loadgen.New(gen)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.addrs...), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	t0 := time.Now()
	sum, err := loadgen.Run(ctx, cl, g, loadgen.RunConfig{Topic: topic, Count: uint64(r.c.Records), Encoder: r.enc})
	if err != nil {
		return fmt.Errorf("produce input: %w", err)
	}
	if sum.Produced != uint64(r.c.Records) {
		return fmt.Errorf("produce input: %d of %d records acknowledged", sum.Produced, r.c.Records)
	}
	r.c.Log.Info().Str("topic", topic).Int("records", r.c.Records).Dur("took", time.Since(t0)).Msg("input produced")
	return nil
}

// createTopics creates topics with the input's partition count.
func (r *runner) createTopics(ctx context.Context, topics ...string) error {
	return broker.CreateTopics(ctx, r.adm, r.c.Partitions, nil, topics...)
}

// cleanup deletes a finished round's group and topics, so that a long
// run keeps the broker's disk bounded; a failure is logged, not
// returned (nothing measured depends on it).
func (r *runner) cleanup(group string, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := r.adm.DeleteGroups(ctx, group); err != nil {
		r.c.Log.Debug().Err(err).Str("group", group).Msg("delete group")
	}
	if _, err := r.adm.DeleteTopics(ctx, topics...); err != nil {
		r.c.Log.Debug().Err(err).Strs("topics", topics).Msg("delete topics")
	}
}

// deleteInputs deletes the input topics at the end of a run.
func (r *runner) deleteInputs() {
	if len(r.inputs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := r.adm.DeleteTopics(ctx, r.inputs...); err != nil {
		r.c.Log.Warn().Err(err).Strs("topics", r.inputs).Msg("delete the input topics")
	}
}

// passthroughRound runs round i of the passthrough, or with dec of the
// decode reference.
func (r *runner) passthroughRound(ctx context.Context, i int, prof io.Writer, dec *decode.Decoder) (Round, error) {
	side, what := sidePassthrough, "pt"
	if dec != nil {
		side, what = sideDecode, "dec"
	}
	out := r.name(what+"-out", i)
	group := r.name(what, i)
	if err := r.createTopics(ctx, out); err != nil {
		return Round{}, err
	}
	defer r.cleanup(group, out)
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
	defer stop()
	return r.runSide(ctx, side, group, r.input(), processCPU, p.run)
}
