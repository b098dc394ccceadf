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
)

// Target is the worker a feed changes (*consumer.Worker).
type Target interface {
	// Budgets returns the budgets in force.
	Budgets() []flow.Budget
	// UpdateBudgets replaces them; on an error nothing changes.
	UpdateBudgets([]flow.Budget) (flow.Changes, error)
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
	records  *prometheus.CounterVec
}

// Start reads the control topic to its end with a client of clientOpts,
// applying every record to t, then follows it in the background until
// stop. Records are counted in throttler_control_records_total{result}
// of reg.
func Start(ctx context.Context, topic string, clientOpts []kgo.Opt, t Target, reg prometheus.Registerer, log zerolog.Logger) (stop func(), err error) {
	cs := &feed{target: t, log: log, state: control.NewState(t.Budgets()), waiting: map[string]error{}}
	cs.records = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttler_control_records_total",
		Help: "Control topic records by result: applied (the budgets changed), waiting (the set they would give is invalid; retried after each change), invalid (cannot be decoded or breaks the budget rules; ignored).",
	}, []string{"result"})
	if err := reg.Register(cs.records); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		cs.records = are.ExistingCollector.(*prometheus.CounterVec)
	}
	f, err := control.Follow(ctx, topic, clientOpts, cs.record)
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
		log.Warn().Str("budget", name).Err(err).Msg("control record waits: the budgets it gives are invalid; the budget stays as it was")
	}
	cs.mu.Unlock()
	log.Info().Str("topic", topic).Strs("budgets", budgetNames(t.Budgets())).Msg("control topic read")
	return f.Close, nil
}

// record applies one control record (the follower's goroutine).
func (cs *feed) record(r *kgo.Record) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	log := cs.log.With().Str("budget", string(r.Key)).Int64("offset", r.Offset).Logger()
	rec, err := control.Decode(r.Key, r.Value)
	if err != nil {
		cs.records.WithLabelValues("invalid").Inc()
		log.Error().Err(err).Msg("control record ignored: the budget stays as it was")
		return
	}
	accepted, waiting := cs.state.Apply(rec, func(bs []flow.Budget) error {
		ch, err := cs.target.UpdateBudgets(bs)
		if err == nil && !ch.Empty() {
			log.Info().Strs("added", ch.Added).Strs("changed", ch.Changed).Strs("deleted", ch.Deleted).Msg("budgets changed")
		}
		return err
	})
	cs.records.WithLabelValues("applied").Add(float64(len(accepted)))
	for _, a := range accepted {
		delete(cs.waiting, a.Name)
	}
	if err, ok := waiting[rec.Name]; ok {
		cs.records.WithLabelValues("waiting").Inc()
		cs.waiting[rec.Name] = err
		if cs.caught {
			log.Warn().Err(err).Str("op", rec.Op.String()).Msg("control record waits: the budgets it gives are invalid; the budget stays as it was")
		}
	}
}

func budgetNames(bs []flow.Budget) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}
