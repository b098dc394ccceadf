package scale

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/throttler/throttler/internal/tools/loadgen"
)

// Names of a scale run's topics, group and budgets.
const (
	group        = "scale"
	inputTopic   = "events"
	outputTopic  = "passed"
	rejectTopic  = "rejected"
	deadTopic    = group + ".dead-letter"
	statsTopic   = group + ".stats"
	capsTopic    = group + ".caps"
	controlTopic = group + ".changes"
	pacedPrefix  = "paced-"
	lightPrefix  = "light-"
	// pacedPass is the share of its events a paced budget's target allows.
	pacedPass = 0.5
)

// coordinationTopics are the topics whose bytes and records count as
// coordination: stats, caps and control.
var coordinationTopics = []string{statsTopic, capsTopic, controlTopic}

// destinations are the topics a worker delivers input records to.
var destinations = []string{outputTopic, rejectTopic, deadTopic}

// pacedName is the name of paced budget i.
func pacedName(i int) string { return pacedPrefix + strconv.Itoa(i) }

// generator returns the load generator of a row of b budgets: c.Paced
// budgets by name with c.PacedShare of the events, and b-c.Paced light
// budgets drawn by Zipf rank (exponent c.Skew) with the rest.
func (c *Config) generator(b int) loadgen.Config {
	g := loadgen.Config{Seed: 1, Users: c.Users}
	for i := range c.Paced {
		g.Budgets = append(g.Budgets, loadgen.Budget{Name: pacedName(i), Weight: 1})
	}
	if light := b - c.Paced; light > 0 {
		g.Spread = loadgen.Spread{Count: light, Prefix: lightPrefix, Skew: c.Skew,
			Weight: float64(c.Paced) * (1 - c.PacedShare) / c.PacedShare}
	}
	return g
}

// pacedTarget is a paced budget's target: pacedPass of its events over
// the window.
func (c *Config) pacedTarget() float64 {
	return math.Round(pacedPass * c.Rate * c.PacedShare / float64(c.Paced) * c.Duration.Seconds())
}

// writeBudgetsFile writes the light budgets of a row of b budgets as JSON
// lines: period budgets of a minute whose target is twice the events
// their rank expects a minute (at least 10), so that they pass what they
// get while their controllers run.
func (c *Config) writeBudgetsFile(path string, b int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	light := b - c.Paced
	perMinute := c.Rate * (1 - c.PacedShare) * 60
	for k, share := range loadgen.SpreadShares(light, c.Skew) {
		target := max(10, math.Ceil(2*perMinute*share))
		fmt.Fprintf(w, `{"name":%q,"target":%g,"period":"1m"}`+"\n", loadgen.SpreadName(lightPrefix, k, light), target)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeConfig writes the workers' config: the paced window budgets from
// begin for the run's duration, and the light budgets in budgetsFile
// (none when empty: they come through the control topic).
func (c *Config) writeConfig(path, brokers, budgetsFile string, begin time.Time) error {
	cfg := fmt.Sprintf(`# written by throttler scale
brokers: [%q]
group: %s
topics:
  input: [%s]
  output: %s
  rejected: %s
delivery: %s
fields: {budget: campaign, key: user, id: id}
log: {level: info}
timeouts: {session: 15s, heartbeat: 1s, rebalance: 15s, transaction: 15s}
`, brokers, group, inputTopic, outputTopic, rejectTopic, c.Delivery)
	if budgetsFile != "" {
		cfg += "budgets_file: " + budgetsFile + "\n"
	}
	cfg += "budgets:\n"
	end := begin.Add(c.Duration)
	for i := range c.Paced {
		cfg += fmt.Sprintf("  - {name: %s, target: %g, begin: %s, end: %s}\n", pacedName(i), c.pacedTarget(),
			begin.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano))
	}
	return os.WriteFile(path, []byte(cfg), 0o644)
}

// rowDir returns the directory of the row of b budgets.
func rowDir(dir string, b int) string { return filepath.Join(dir, "budgets-"+strconv.Itoa(b)) }
