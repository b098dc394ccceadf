package scale

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/throttler/throttler/stats"
)

// TestRunSmall runs a small scale row end to end with a freshly built
// throttler binary: 60 budgets (10 paced) imported through the control
// topic, 2 workers over 4 partitions, 500 events/s for 6 s, 30 budget
// changes a second in the middle third. It checks that every figure was
// taken and that exactly-once held; it asserts no speed or cost.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the throttler binary and runs a broker and two workers")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "throttler")
	build := exec.Command("go", "build", "-o", bin, "github.com/throttler/throttler/cmd/throttler")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := Config{Budgets: []int{60}, Partitions: 4, Workers: 2, Rate: 500, Duration: 6 * time.Second, Skew: DefaultSkew,
		ViaControl: true, ChurnRate: 30, Dir: filepath.Join(dir, "run"), Keep: true, Binary: bin, Yardstick: 20_000,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	rep, err := Run(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	if y := rep.Yardstick; y == nil || !(y.PassthroughRPS > 0) || !(y.PipelineRPS > 0) || y.Records != 20_000 {
		t.Errorf("yardstick %+v", y)
	}
	r := rep.Rows[0]
	if len(r.Notes) > 0 {
		logs, _ := os.ReadFile(filepath.Join(c.Dir, "budgets-60", "worker-1.err"))
		t.Fatalf("notes %q\nworker 1:\n%.3000s", r.Notes, logs)
	}
	if r.IDs.Input != 3000 || r.IDs.Delivered != 3000 || r.IDs.Lost != 0 || r.IDs.Duplicated != 0 || !r.IDs.Complete {
		t.Errorf("ids %+v", r.IDs)
	}
	if r.Input.Records != 3000 || r.Input.Bytes < 3000*80 || r.CoordinationTopics[statsTopic].Records == 0 {
		t.Errorf("input %+v, coordination %+v", r.Input, r.CoordinationTopics)
	}
	// The stats topic by kind: its ledgers and its definitions add up
	// with the rest to the topic, and the ledger ratio is theirs.
	var kinds Volume
	for _, v := range r.StatsKinds {
		kinds.Records += v.Records
		kinds.Bytes += v.Bytes
	}
	led := r.StatsKinds[stats.KindLedger.String()]
	st := r.CoordinationTopics[statsTopic]
	if kinds.Records != st.Records || kinds.Bytes != st.Bytes || led.Records == 0 || r.StatsKinds[stats.KindBudget.String()].Records == 0 ||
		r.LedgerBytesRatio != float64(led.Bytes)/float64(r.Input.Bytes) {
		t.Errorf("stats topic %+v, by kind %+v, ledger ratio %v", st, r.StatsKinds, r.LedgerBytesRatio)
	}
	ch := r.Churn
	if ch == nil || ch.Adds == 0 || ch.Changes == 0 || ch.Deletes == 0 || r.ImportSeconds == nil {
		t.Fatalf("churn %+v, import %v", ch, r.ImportSeconds)
	}
	// The control topic holds the 50 imported light budgets and every
	// change.
	if got, want := r.CoordinationTopics[controlTopic].Records, int64(50+ch.Adds+ch.Changes+ch.Deletes); got != want {
		t.Errorf("control topic holds %d records, want %d", got, want)
	}
	if len(r.Workers) != 2 || r.StatusSeconds == nil || r.FirstDelivery == nil || r.LongestGap == nil || len(r.Paced) != 10 {
		t.Fatalf("row %+v", r)
	}
	for i, w := range r.Workers {
		if w.FirstDelivery == nil || w.PeakRSS == 0 || !(w.CPU > 0) || !(w.RequestsSteady > 0) || w.Exit != "" {
			t.Errorf("worker %d: %+v", i+1, w)
		}
	}
}
