// Package controlfeed applies the control topic to a running worker: it
// reads the topic to its end, applying every budget change (throttler
// budget set/delete/reset) to the worker's flow tree, then follows it. It
// knows the worker only as a Target, so that package consumer needs
// neither the control record format nor the config rules it checks.
package controlfeed

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/clip"
)

// Target is the worker a feed changes (*consumer.Worker).
type Target interface {
	// Budget returns the budget of that name in force, if any.
	Budget(name string) (flow.Budget, bool)
	// BudgetCount returns the number of budgets in force.
	BudgetCount() int
	// ApplyBudgets adds, changes and deletes budgets, at a cost that
	// follows the changes (not the number of budgets); on an error
	// nothing changes.
	ApplyBudgets([]flow.Change) (flow.Changes, error)
}

// feed is a worker's side of the control topic.
type feed struct {
	mu       sync.Mutex // the follower's goroutine, and stop
	target   Target
	log      zerolog.Logger
	state    *control.State
	follower *control.Follower
	caught   bool
	waiting  map[string]error // reported once caught up
	counts   *prometheus.CounterVec
}

// Start reads the control topic to its end with a client of clientOpts,
// applying every record to t, then follows it in the background until
// stop. Records are counted in throttler_control_records_total{result}
// of reg.
func Start(ctx context.Context, topic string, clientOpts []kgo.Opt, t Target, reg prometheus.Registerer, log zerolog.Logger) (stop func(), err error) {
	cs := &feed{target: t, log: log, state: control.NewState(t.Budget), waiting: map[string]error{}}
	cs.counts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttler_control_records_total",
		Help: "Control topic records by result: applied (the budgets changed), waiting (the set they would give is invalid; retried after each change), invalid (cannot be decoded or breaks the budget rules; ignored).",
	}, []string{"result"})
	if err := reg.Register(cs.counts); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		cs.counts = are.ExistingCollector.(*prometheus.CounterVec)
	}
	f, err := control.FollowBatches(ctx, topic, clientOpts, cs.records)
	if err != nil {
		return nil, fmt.Errorf("control topic: %w", err)
	}
	cs.mu.Lock()
	cs.follower = f
	cs.mu.Unlock()
	if err := f.WaitCaughtUp(ctx); err != nil {
		f.Close()
		return nil, fmt.Errorf("control topic: %w", err)
	}
	cs.mu.Lock()
	cs.caught = true
	for name, err := range cs.waiting {
		log.Warn().Str("budget", clip.String(name)).Str("error", clip.Error(err)).Msg("control record waits: the budgets it gives are invalid; the budget stays as it was")
	}
	cs.mu.Unlock()
	log.Info().Str("topic", topic).Int("budgets", t.BudgetCount()).Msg("control topic read")
	return f.Close, nil
}

// logNames bounds the budget names a log line lists.
const logNames = 10

// records applies the control records of one fetch (the follower's
// goroutine) as one batch: a worker catching up on many records changes
// its budgets a few times, not once per record.
func (cs *feed) records(rs []*kgo.Record) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	recs := make([]control.Record, 0, len(rs))
	for _, r := range rs {
		rec, err := control.Decode(r.Key, r.Value)
		if err != nil {
			cs.counts.WithLabelValues("invalid").Inc()
			cs.log.Error().Str("budget", clip.Bytes(r.Key)).Int64("offset", r.Offset).Str("error", clip.Error(err)).Msg("control record ignored: the budget stays as it was")
			continue
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return
	}
	accepted, waiting := cs.state.ApplyBatch(recs, func(b *control.Batch) error {
		bc := b.Changes()
		changes := make([]flow.Change, len(bc))
		for i, c := range bc {
			changes[i] = flow.Change(c)
		}
		ch, err := cs.target.ApplyBudgets(changes)
		if err == nil && !ch.Empty() {
			// At most logNames names of each kind, with the counts.
			cs.log.Info().Strs("added", first(ch.Added, logNames)).Strs("changed", first(ch.Changed, logNames)).
				Strs("deleted", first(ch.Deleted, logNames)).Int("n_added", len(ch.Added)).Int("n_changed", len(ch.Changed)).
				Int("n_deleted", len(ch.Deleted)).Msg("budgets changed")
		}
		return err
	})
	// An older record of a name in the same fetch was replaced by the
	// newer one: applied and overwritten, as one by one.
	cs.counts.WithLabelValues("applied").Add(float64(len(accepted) + len(recs) - distinctNames(recs)))
	for _, a := range accepted {
		delete(cs.waiting, a.Name)
	}
	counted := make(map[string]bool)
	for _, rec := range recs {
		err, ok := waiting[rec.Name]
		if !ok || counted[rec.Name] {
			continue
		}
		counted[rec.Name] = true
		cs.counts.WithLabelValues("waiting").Inc()
		cs.waiting[rec.Name] = err
		if cs.caught {
			cs.log.Warn().Str("budget", clip.String(rec.Name)).Str("error", clip.Error(err)).Str("op", rec.Op.String()).Msg("control record waits: the budgets it gives are invalid; the budget stays as it was")
		}
	}
}

func distinctNames(rs []control.Record) int {
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		seen[r.Name] = true
	}
	return len(seen)
}

func first(names []string, n int) []string { return names[:min(n, len(names))] }
