package sim

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
)

// WriteJSON writes the report as one JSON document.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteCSV writes the timeline: t_seconds,budget,offered,passed,rewarded,ideal.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"t_seconds", "budget", "offered", "passed", "rewarded", "ideal"}); err != nil {
		return err
	}
	for _, row := range r.Timeline {
		rec := []string{
			strconv.FormatFloat(row.T, 'f', -1, 64),
			row.Budget,
			strconv.FormatUint(row.Offered, 10),
			strconv.FormatUint(row.Passed, 10),
			strconv.FormatUint(row.Rewarded, 10),
			strconv.FormatFloat(row.Ideal, 'f', 2, 64),
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
