package stats

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// Exchange implements flow.Exchange over the stats topic: Publish produces
// through a Publisher and a client, View reads a View.
//
// Publish is asynchronous: it hands the records to the client and returns;
// a failure is reported by a later Publish (or Flush). Callers publish once
// per sync interval (see Publisher for the coordination cost).
//
// An Exchange is safe for concurrent use. It does not own its collaborators:
// closing the client and the View is the caller's job.
type Exchange struct {
	cl   *kgo.Client
	pub  *Publisher
	view *View

	mu       sync.Mutex
	firstErr error         // first produce failure not yet returned
	inflight int           // records handed to the client, not yet acknowledged or failed
	idle     chan struct{} // closed when inflight drops to 0; nil while idle

	produced, failed atomic.Uint64
}

var _ flow.Exchange = (*Exchange)(nil)

// NewExchange returns an Exchange producing with cl, a non-transactional
// client (Publish produces outside any transaction), and reading view.
// Configure cl's kgo.RecordDeliveryTimeout to bound how long a report may
// wait for a broker that is down.
func NewExchange(cl *kgo.Client, pub *Publisher, view *View) (*Exchange, error) {
	if cl == nil || pub == nil || view == nil {
		return nil, errInvalidConfig("NewExchange needs a client, a publisher and a view")
	}
	if pub.Topic() != view.Topic() {
		return nil, errInvalidConfig("publisher topic %q differs from view topic %q", pub.Topic(), view.Topic())
	}
	return &Exchange{cl: cl, pub: pub, view: view}, nil
}

// Publish produces one record per report, asynchronously (it blocks only
// while the client's buffer is full, see kgo.MaxBufferedRecords). It returns an
// encoding error (nothing is produced then), or else the first produce
// failure seen since the previous Publish or Flush returned one (a
// *ProduceError), or nil.
func (e *Exchange) Publish(reports []flow.Report) error {
	recs, err := e.pub.Records(reports)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.inflight == 0 && len(recs) > 0 {
		e.idle = make(chan struct{})
	}
	e.inflight += len(recs)
	e.mu.Unlock()
	for i, rec := range recs {
		r := reports[i]
		e.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			if err == nil {
				e.produced.Add(1)
			} else {
				e.failed.Add(1)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if err != nil && e.firstErr == nil {
				e.firstErr = e.pub.produceError(r, err)
			}
			if e.inflight--; e.inflight == 0 {
				close(e.idle)
				e.idle = nil
			}
		})
	}
	return e.takeErr()
}

// View appends the newest report of every source of budget to dst; see
// View.View.
func (e *Exchange) View(budget string, dst []flow.Report) []flow.Report {
	return e.view.View(budget, dst)
}

// Flush waits until every stats record published so far is acknowledged or
// failed (or ctx ends: ctx's error), then returns like Publish: the first
// failure not yet returned. It does not wait for other records the client
// may be producing.
func (e *Exchange) Flush(ctx context.Context) error {
	e.mu.Lock()
	idle := e.idle
	e.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return e.takeErr()
}

// Produced and Failed count the stats records the broker acknowledged and
// those that failed, for the caller's metrics.
func (e *Exchange) Produced() uint64 { return e.produced.Load() }

// Failed counts stats records that could not be produced.
func (e *Exchange) Failed() uint64 { return e.failed.Load() }

func (e *Exchange) takeErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.firstErr
	e.firstErr = nil
	return err
}
