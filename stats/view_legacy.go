package stats

import "slices"

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
