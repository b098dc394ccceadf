package stats

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/flow"
)

// DefinitionSource is what DefinitionRecords compares with: a View
// satisfies it.
type DefinitionSource interface {
	// ShowsBudget reports whether the budget's published definition has
	// b's content.
	ShowsBudget(b flow.Budget) bool
	ExperimentDef(layer, experiment string) (ExperimentDef, bool)
}

// DefinitionRecords returns the definition records (kinds 2 and 4) of the
// budgets and experiments a worker runs whose content src does not
// already show: the definition itself, whoever published it and when
// (At and Origin are not compared). Those returned carry at and origin.
//
// Definitions are thus published on change only, not every sync interval.
// Intended use: once the View is caught up, call it with every definition
// at start, and with the changed ones when the worker's definitions change
// (a budget update, a new configuration); produce the records (a
// transaction that aborts is simply followed by another call: the View
// still lacks them). Do not call it periodically with every definition:
// it costs O(definitions given), and two workers running different
// versions of a definition during a rollout would then re-publish theirs
// in turn. Definitions the worker no longer runs are not tombstoned here:
// a removal is the caller's decision (Publisher.TombstoneKey).
func (p *Publisher) DefinitionRecords(src DefinitionSource, budgets []flow.Budget, experiments []ExperimentDef, origin string, at time.Time) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for _, b := range budgets {
		if src.ShowsBudget(b) { // false for a budget that cannot be encoded: BudgetRecord says why
			continue
		}
		rec, err := p.BudgetRecord(BudgetDef{Budget: b, At: at, Origin: origin})
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	for _, e := range experiments {
		e.At = time.Time{}
		_, mine, err := EncodeExperimentDef(e)
		if err != nil {
			return nil, err
		}
		if cur, ok := src.ExperimentDef(e.Layer, e.Experiment); ok {
			cur.At = time.Time{}
			if _, theirs, err := EncodeExperimentDef(cur); err == nil && bytes.Equal(mine, theirs) {
				continue
			}
		}
		e.At = at
		rec, err := p.ExperimentRecord(e)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
