package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/flow"
)

// controlState is the worker's side of the control topic.
type controlState struct {
	mu       sync.Mutex // the follower's goroutine, and stopControl
	state    *control.State
	follower *control.Follower
	caught   bool
	waiting  map[string]error // reported once caught up
	records  *prometheus.CounterVec
}

// startControl reads the control topic to its end, applying every record
// to the flow tree, then follows it in the background. Without a control
// topic it does nothing.
func (w *Worker) startControl(ctx context.Context) error {
	topic := w.cfg.topics.Control
	if topic == "" {
		return nil
	}
	cs := &controlState{state: control.NewState(w.tree.Budgets()), waiting: map[string]error{}}
	cs.records = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "throttler_control_records_total",
		Help: "Control topic records by result: applied (the budgets changed), waiting (the set they would give is invalid; retried after each change), invalid (cannot be decoded or breaks the budget rules; ignored).",
	}, []string{"result"})
	if err := w.reg.Register(cs.records); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		cs.records = are.ExistingCollector.(*prometheus.CounterVec)
	}
	w.control = cs
	f, err := control.Follow(ctx, topic, w.cfg.clientOpts, w.controlRecord)
	if err != nil {
		return fmt.Errorf("control topic: %w", err)
	}
	cs.mu.Lock()
	cs.follower = f
	cs.mu.Unlock()
	if err := f.WaitCaughtUp(ctx); err != nil {
		f.Close()
		return fmt.Errorf("control topic: %w", err)
	}
	cs.mu.Lock()
	cs.caught = true
	for name, err := range cs.waiting {
		w.log.Warn().Str("budget", name).Err(err).Msg("control record waits: the budgets it gives are invalid; the budget stays as it was")
	}
	cs.mu.Unlock()
	w.log.Info().Str("topic", topic).Strs("budgets", budgetNames(w.tree.Budgets())).Msg("control topic read")
	return nil
}

func (w *Worker) stopControl() {
	if w.control != nil && w.control.follower != nil {
		w.control.follower.Close()
	}
}

// controlRecord applies one control record (the follower's goroutine).
func (w *Worker) controlRecord(r *kgo.Record) {
	cs := w.control
	cs.mu.Lock()
	defer cs.mu.Unlock()
	log := w.log.With().Str("budget", string(r.Key)).Int64("offset", r.Offset).Logger()
	rec, err := control.Decode(r.Key, r.Value)
	if err != nil {
		cs.records.WithLabelValues("invalid").Inc()
		log.Error().Err(err).Msg("control record ignored: the budget stays as it was")
		return
	}
	accepted, waiting := cs.state.Apply(rec, func(bs []flow.Budget) error {
		ch, err := w.UpdateBudgets(bs)
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
