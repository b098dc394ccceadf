package scale

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Row is one budget count's figures. Times are seconds; CPU is a
// fraction of one core; memory is bytes. A figure that could not be
// measured is null (pointers) or explained in Notes.
type Row struct {
	Budgets int `json:"budgets"`
	// Notes say what went wrong: nothing delivered, a worker killed or
	// exited, a wait that timed out.
	Notes []string `json:"notes"`
	// Input is what the load generator wrote; Coordination what the
	// workers (and budget changes) wrote to CoordinationTopics, aborted
	// records included; the ratios are Coordination over Input.
	Input              Volume            `json:"input"`
	Coordination       Volume            `json:"coordination"`
	BytesRatio         float64           `json:"coordination_bytes_ratio"`
	RecordsRatio       float64           `json:"coordination_records_ratio"`
	CoordinationTopics map[string]Volume `json:"coordination_topics"`
	// StatsKinds is what the stats topic holds of each record kind, by
	// its name ("budget definition", "ledger", "worker status"): the
	// definitions are written once, when budgets are defined; the
	// ledgers at every commit. LedgerBytesRatio is the ledgers' bytes
	// over the input's.
	StatsKinds       map[string]Volume `json:"coordination_stats_kinds"`
	LedgerBytesRatio float64           `json:"ledger_bytes_ratio"`
	LargestTopic     string            `json:"largest_record_topic"`
	// Transactions are the workers' throttler_commits_total: committed
	// and aborted over the row, aborted in steady state (the last two
	// thirds of the load).
	Transactions struct {
		Committed     float64 `json:"committed"`
		Aborted       float64 `json:"aborted"`
		AbortedSteady float64 `json:"aborted_steady"`
	} `json:"transactions"`
	Workers []WorkerRow `json:"workers"`
	// CPU sums the workers' CPU over the load; CPUSteady over its last
	// two thirds.
	CPU       float64 `json:"workers_cpu"`
	CPUSteady float64 `json:"workers_cpu_steady"`
	Broker    struct {
		CPU     float64 `json:"cpu"`
		PeakRSS int64   `json:"peak_rss_bytes"`
	} `json:"broker"`
	// FirstDelivery is the time from the workers' start to the first
	// record in a destination topic (read_committed).
	FirstDelivery *float64 `json:"first_delivery_seconds"`
	IDs           struct {
		Input      int `json:"input"`
		Delivered  int `json:"delivered"`
		Lost       int `json:"lost"`
		Duplicated int `json:"duplicated"`
		// Complete says the destination topics were read to their end
		// after the workers stopped: lost ids are lost, not late.
		Complete bool `json:"complete"`
	} `json:"ids"`
	// ActiveBudgets is the number of budgets that saw an event in the
	// row: those named by a delivered record's throttler-budget header.
	ActiveBudgets int        `json:"active_budgets"`
	Paced         []PacedRow `json:"paced"`
	// PacedMaxDeviation is the largest |deviation| of a paced budget.
	PacedMaxDeviation float64 `json:"paced_max_abs_deviation"`
	// LongestGap is the longest time between two deliveries of an input
	// partition in the steady state, budget changes left out (before and
	// after them, when there are).
	LongestGap *float64  `json:"longest_gap_seconds"`
	Churn      *ChurnRow `json:"churn,omitempty"`
	// ImportSeconds is the time `throttler budget import` took (budgets
	// through the control topic); StatusSeconds the time of `throttler
	// status --top 20` after the run, its topics compacted.
	ImportSeconds *float64 `json:"import_seconds,omitempty"`
	StatusSeconds *float64 `json:"status_seconds"`
	Seconds       float64  `json:"seconds"`
}

// WorkerRow is one worker's figures.
type WorkerRow struct {
	CPU       float64 `json:"cpu"`
	CPUSteady float64 `json:"cpu_steady"`
	// RequestsSteady is the Kafka requests a second the worker's clients
	// wrote in the steady state (throttler_kafka_requests_total).
	RequestsSteady float64  `json:"requests_per_second_steady"`
	PeakRSS        int64    `json:"peak_rss_bytes"`
	Ready          *float64 `json:"ready_seconds"`          // start to /readyz 200
	FirstDelivery  *float64 `json:"first_delivery_seconds"` // start to its first delivered record, within a poll of its metrics
	Exit           string   `json:"exit,omitempty"`         // how it ended, when not cleanly on SIGTERM
}

// PacedRow is a paced budget's passes against its target.
type PacedRow struct {
	Budget    string  `json:"budget"`
	Target    float64 `json:"target"`
	Passed    int64   `json:"passed"`
	Deviation float64 `json:"deviation"` // passed/target - 1
}

// ChurnRow is what the budget changes did.
type ChurnRow struct {
	Rate    float64 `json:"rate"`
	Adds    int     `json:"adds"`
	Changes int     `json:"changes"`
	Deletes int     `json:"deletes"`
	// LongestGap is the longest time between two deliveries of an input
	// partition while the changes ran; after them, AfterLongestGap.
	LongestGap      float64 `json:"longest_gap_seconds"`
	AfterLongestGap float64 `json:"after_longest_gap_seconds"`
}

// WriteTable prints rows as a table, one line each.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "budgets\tactive\tcoord bytes (ledgers)\tcoord records\tlargest rec\taborted (steady)\tworkers CPU (steady)\treq/s a worker (steady)\tmax peak RSS\tmax 1st delivery\tlost/dup\tpaced max dev\tlongest gap\tstatus\tnotes\t")
	for _, r := range rows {
		var rss int64
		var first *float64
		reqLo, reqHi := math.Inf(1), 0.0
		for _, w := range r.Workers {
			rss = max(rss, w.PeakRSS)
			reqLo, reqHi = min(reqLo, w.RequestsSteady), max(reqHi, w.RequestsSteady)
			if w.FirstDelivery != nil && (first == nil || *w.FirstDelivery > *first) {
				first = w.FirstDelivery
			}
		}
		gap := secs(r.LongestGap)
		if r.Churn != nil {
			gap = fmt.Sprintf("%s / %.2fs churn", gap, r.Churn.LongestGap)
		}
		if len(r.Workers) == 0 {
			reqLo = 0
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2fx (%.2fx)\t%.2fx\t%s\t%.0f (%.0f)\t%.2f (%.2f)\t%.0f–%.0f\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t\n",
			r.Budgets, r.ActiveBudgets, r.BytesRatio, r.LedgerBytesRatio, r.RecordsRatio, size(r.Coordination.Largest), r.Transactions.Aborted, r.Transactions.AbortedSteady,
			r.CPU, r.CPUSteady, reqLo, reqHi, size(rss), secs(first), r.IDs.Lost, r.IDs.Duplicated, pct(r), gap, secs(r.StatusSeconds), strings.Join(r.Notes, "; "))
	}
	return tw.Flush()
}

// WriteYardstick prints the machine's speed the rows were measured at, a
// line; nothing when it was not measured.
func WriteYardstick(w io.Writer, y *Yardstick) error {
	if y == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "machine yardstick (throttler bench, kfake, exactly-once, one budget, %d records, median of %d rounds): passthrough %.2f M records/s, pipeline %.2f M records/s\n",
		y.Records, y.Rounds, y.PassthroughRPS/1e6, y.PipelineRPS/1e6)
	return err
}

func pct(r Row) string {
	if len(r.Paced) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*r.PacedMaxDeviation)
}

func secs(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fs", *s)
}

func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
