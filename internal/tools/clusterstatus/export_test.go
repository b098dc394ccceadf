package clusterstatus

import "io"

// WriteText prints st as two tables: budgets, then experiments.
func WriteText(w io.Writer, st Status) error {
	writeTextHead(w, st)
	t := newBudgetTable(w)
	for _, b := range st.Budgets {
		if err := t.row(b); err != nil {
			return err
		}
	}
	if err := t.end(); err != nil {
		return err
	}
	return writeExperiments(w, st.Experiments)
}
