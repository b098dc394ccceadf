package suite

import (
	"os"
	"strings"
	"testing"
	"time"
)

// FenceRun is a run of exactly-once workers over paced load, for the
// tests of transactions the broker ends on its own.
type FenceRun struct {
	Brk                *Cluster
	Addr, Input, Group string
	Cfg                string
	Begin, End         time.Time
	Gen                *Proc
	Target, Partitions int
}

// StartFenceRun starts load of window seconds at 1,000 events/s on a
// broker of kind k and writes the workers' config (groupConfig).
func StartFenceRun(t *testing.T, k BrokerKind, window time.Duration) *FenceRun {
	t.Helper()
	r := &FenceRun{Brk: SharedCluster(t, k, 12), Target: 4000 * int(window/(10*time.Second)), Partitions: 12}
	r.Addr, r.Input, r.Group = r.Brk.Addr, r.Brk.Name("events"), r.Brk.Name("fence")
	r.Begin = time.Now().Add(8 * time.Second).Truncate(time.Second)
	r.End = r.Begin.Add(window)
	r.Cfg = GroupConfig(t, k, r.Addr, r.Group, r.Input, "exactly-once", r.Partitions, r.Target, r.Begin, r.End)
	r.Gen = Start(t, "loadgen", "loadgen", "--brokers", r.Addr, "--topic", r.Input, "--partitions", "12",
		"--rate", "1000", "--duration", time.Until(r.End.Add(2*time.Second)).Round(time.Second).String(),
		"--budgets", "campaign:9,ghost:1", "--users", "2000", "--skew", "1.2", "--seed", "13")
	WaitProducing(t, r.Gen, r.Addr, r.Input)
	return r
}

// Worker starts a worker with transactional id id.
func (r *FenceRun) Worker(t *testing.T, name, id string) *Proc {
	return Start(t, name, "run", "--config", r.Cfg, "--transactional-id", id)
}

// Finish waits for the load's end and checks the run (finishExactlyOnce).
func (r *FenceRun) Finish(t *testing.T, workers ...*Proc) {
	t.Helper()
	LoadDone(t, r.Gen)
	FinishExactlyOnce(t, r.Addr, r.Group, r.Input, r.Target, r.Partitions, workers...)
}

// GrepFile returns the first line of a file that holds want and one of
// alts, or "" (no such line, or no file).
func GrepFile(path, want string, alts ...string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(data), "\n") {
		for _, alt := range alts {
			if strings.Contains(l, want) && strings.Contains(l, alt) {
				return l
			}
		}
	}
	return ""
}
