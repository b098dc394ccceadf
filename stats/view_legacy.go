package stats

import (
	"slices"
	"time"

	"github.com/throttler/throttler/flow"
)

// LegacyKeys returns the keys of the records of source of the kinds the
// ledger replaces that the View holds: kind-1 reports (budget x source)
// and kind-3 variant counts (experiment x source). A new owner of the
// source tombstones them once its ledger is written (they would otherwise
// cost every catch-up for ever). It costs O(budgets with kind-1 reports +
// experiments), nothing once every source's were tombstoned.
func (v *View) LegacyKeys(source string) [][]byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out [][]byte
	for budget, rs := range v.budgets {
		if _, ok := searchSource(rs, source); ok {
			if k, err := EncodeKey(budget, source); err == nil {
				out = append(out, k)
			}
		}
	}
	for id, bySrc := range v.defs.variants {
		if _, ok := bySrc[source]; ok {
			if k, err := VariantsKey(id.layer, id.experiment, source); err == nil {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b []byte) int { return slices.Compare(a, b) })
	return out
}

// legacyShown says whether a kind-1 report (or kind-3 counts) of a source
// at instant at is newer than the source's ledger, if it has one.
func (v *View) legacyShown(r flow.Report) bool { return v.legacyNewer(r.Source, r.At) }

func (v *View) legacyNewer(source string, at time.Time) bool {
	s := v.led.sources[source]
	return s == nil || at.After(s.at)
}
