package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/consumer"
	"github.com/throttler/throttler/decode"
)

// passthrough is the reference: it copies every input record to output
// with the worker's client settings, delivery mode and commit cadence, and
// does nothing else; with dec, it also decodes the records of each poll
// before it copies them (the decode reference, Config.DecodeReference).
type passthrough struct {
	opts          []kgo.Opt
	group         string
	input, output string
	delivery      consumer.Delivery
	txnID         string
	log           zerolog.Logger
	dec           *decode.Decoder // nil: copy only
}

// unit is the part of a client that differs between the delivery modes,
// as in the worker.
type unit interface {
	client() *kgo.Client
	poll(ctx context.Context, max int) kgo.Fetches
	begin() error
	end(ctx context.Context) error
	allowRebalance()
	close()
}

type txnUnit struct{ s *kgo.GroupTransactSession }

func (u txnUnit) client() *kgo.Client                           { return u.s.Client() }
func (u txnUnit) poll(ctx context.Context, max int) kgo.Fetches { return u.s.PollRecords(ctx, max) }
func (u txnUnit) begin() error                                  { return u.s.Begin() }
func (u txnUnit) end(ctx context.Context) error {
	committed, err := u.s.End(ctx, kgo.TryCommit)
	if err == nil && !committed {
		err = errors.New("transaction aborted")
	}
	return err
}
func (u txnUnit) allowRebalance() { u.s.AllowRebalance() }
func (u txnUnit) close()          { u.s.Close() }

type plainUnit struct{ cl *kgo.Client }

func (u plainUnit) client() *kgo.Client                           { return u.cl }
func (u plainUnit) poll(ctx context.Context, max int) kgo.Fetches { return u.cl.PollRecords(ctx, max) }
func (u plainUnit) begin() error                                  { return nil }
func (u plainUnit) end(ctx context.Context) error {
	if err := u.cl.Flush(ctx); err != nil {
		return err
	}
	return u.cl.CommitUncommittedOffsets(ctx)
}
func (u plainUnit) allowRebalance() { u.cl.AllowRebalance() }
func (u plainUnit) close()          { u.cl.Close() }

func (p passthrough) newUnit() (unit, error) {
	opts := append(append(consumer.ClientTuning(), p.opts...),
		kgo.ConsumerGroup(p.group),
		kgo.ConsumeTopics(p.input),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if p.delivery == consumer.AtLeastOnce {
		cl, err := kgo.NewClient(append(opts, kgo.DisableAutoCommit())...)
		if err != nil {
			return nil, err
		}
		return plainUnit{cl}, nil
	}
	s, err := kgo.NewGroupTransactSession(append(opts, kgo.TransactionalID(p.txnID))...)
	if err != nil {
		return nil, err
	}
	return txnUnit{s}, nil
}

// decodeAll decodes recs with p.dec on GOMAXPROCS goroutines, as the
// worker's partitions decode theirs in parallel, and returns the first
// error of each.
func (p passthrough) decodeAll(recs []*kgo.Record) error {
	n := min(runtime.GOMAXPROCS(0), len(recs))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			var d decode.Decoded
			scan := p.dec.NewScan(p.input)
			for _, r := range recs[k*len(recs)/n : (k+1)*len(recs)/n] {
				if err := p.dec.DecodeWith(r.Key, r.Value, r.Timestamp, &d, scan); err != nil {
					errs[k] = fmt.Errorf("decode %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run copies until ctx ends, then commits what it copied.
func (p passthrough) run(ctx context.Context) error {
	u, err := p.newUnit()
	if err != nil {
		return err
	}
	defer u.close()
	if err := u.begin(); err != nil {
		return err
	}
	cl := u.client()
	var (
		produceErr error
		once       sync.Once
		failed     = make(chan struct{})
	)
	onProduced := func(_ *kgo.Record, err error) {
		if err != nil {
			once.Do(func() { produceErr = err; close(failed) })
		}
	}
	var commits int
	var endTime time.Duration
	defer func() {
		p.log.Debug().Int("commits", commits).Float64("seconds", endTime.Seconds()).Msg("passthrough commit time")
	}()
	commit := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer u.allowRebalance()
		t0 := time.Now()
		defer func() { commits++; endTime += time.Since(t0) }()
		if err := u.end(cctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return u.begin()
	}
	nextCommit := time.Now().Add(consumer.DefaultCommitInterval)
	pending := 0
	for ctx.Err() == nil {
		pctx, cancel := context.WithDeadline(ctx, nextCommit)
		fs := u.poll(pctx, consumer.DefaultMaxPollRecords)
		cancel()
		if fs.IsClientClosed() {
			break
		}
		if p.dec != nil {
			if err := p.decodeAll(fs.Records()); err != nil { // every input record is good
				return err
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			cl.Produce(context.Background(), &kgo.Record{
				Topic: p.output, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp,
			}, onProduced)
			pending++
		})
		select {
		case <-failed:
			return fmt.Errorf("produce: %w", produceErr)
		default:
		}
		if now := time.Now(); !now.Before(nextCommit) || pending >= consumer.DefaultCommitRecords {
			if err := commit(); err != nil {
				return err
			}
			pending = 0
			nextCommit = time.Now().Add(consumer.DefaultCommitInterval)
		}
	}
	return commit()
}
