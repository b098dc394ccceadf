package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/control"
)

var budgetImportCmd = &command{
	name:    "budget import",
	summary: "write many budgets to the control topic from a JSON lines file",
	args:    "FILE",
	doc: `Reads FILE, one budget a line in the format of a config's budgets_file
(docs/configuration.md: {"name":…,"target":…,"begin"/"end" or "period",…}),
checks the budgets as a set with the config file's rules, then writes to the
control topic the definitions it does not already hold, parents before their
children, in batches, and waits for the brokers' acknowledgement. Importing
the same file again writes nothing. Every worker of the group applies them
as 'budget set' would (see 'throttler budget set').

The check: each budget with the rules of 'budget set', names unique in FILE,
parents that exist in FILE or on the control topic (or in --config, the
workers' config file), no cycle, no delay budget as a parent. A problem is
printed as "FILE:LINE: field: reason" on stdout; then nothing is written and
the exit status is 1. What needs the workers' config to judge (a score field
for scored budgets, reward topics for rewards budgets) is left to the
workers, which refuse and count what they cannot run.

Prints what it did: budgets read, written (added, changed) and unchanged;
-json prints it as one JSON object. -dry-run checks and counts and writes
nothing.`,
	setup: func(fs *flag.FlagSet) action {
		cf := addControlFlags(fs)
		cfgPath := fs.String("config", "", "the workers' config `file`: its budgets count as existing parents")
		dry := fs.Bool("dry-run", false, "check and count, write nothing")
		asJSON := fs.Bool("json", false, "print the result as one JSON object")
		return func(ctx context.Context, e *env) error {
			if len(e.args) != 1 {
				return &usageError{"want one FILE argument, got " + fmt.Sprint(len(e.args))}
			}
			res, err := importBudgets(ctx, e, cf, e.args[0], *cfgPath, *dry)
			if err != nil {
				return err
			}
			if *asJSON {
				out, _ := json.Marshal(res)
				fmt.Fprintln(e.stdout, string(out))
				return nil
			}
			verb := "written to"
			if res.DryRun {
				verb = "would be written to"
			}
			fmt.Fprintf(e.stdout, "%s: %d budgets read; %d %s %s (%d added, %d changed), %d unchanged, in %.2fs\n",
				res.File, res.Read, res.Written, verb, res.Topic, res.Added, res.Changed, res.Unchanged, res.Seconds)
			return nil
		}
	},
}

// importResult is what `budget import` prints.
type importResult struct {
	File      string  `json:"file"`
	Topic     string  `json:"topic"`
	Read      int     `json:"read"`
	Written   int     `json:"written"`
	Added     int     `json:"added"`
	Changed   int     `json:"changed"`
	Unchanged int     `json:"unchanged"`
	DryRun    bool    `json:"dry_run"`
	Seconds   float64 `json:"seconds"`
}

// importBudgets reads, checks, plans and writes.
func importBudgets(ctx context.Context, e *env, cf *controlFlags, file, cfgPath string, dry bool) (importResult, error) {
	start := time.Now()
	res := importResult{File: file, DryRun: dry}
	budgets, lines, err := readBudgetsFile(e, file)
	if err != nil {
		return res, err
	}
	res.Read = len(budgets)
	var base []config.Budget
	if cfgPath != "" {
		c, err := config.Load(cfgPath)
		if err != nil {
			return res, fmt.Errorf("--config: %w", err)
		}
		base = c.Budgets
	}
	latest, topic, err := cf.read(ctx)
	if err != nil {
		return res, err
	}
	res.Topic = topic
	current, known := controlBudgets(latest, base)
	if ps := config.CheckBudgetLines(budgets, lines, file, known); len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintln(e.stdout, p.Error())
		}
		fmt.Fprintf(e.stderr, "throttler budget import: %s has %d problem(s); nothing was written\n", file, len(ps))
		return res, exitCode(exitFailure)
	}
	plan, err := control.PlanImport(budgets, current)
	if err != nil {
		return res, err
	}
	res.Added, res.Changed, res.Unchanged = plan.Added, plan.Changed, plan.Unchanged
	if !dry && len(plan.Write) > 0 {
		if err := cf.writeMany(ctx, topic, plan.Write); err != nil {
			return res, err
		}
		res.Written = len(plan.Write)
	}
	if dry {
		res.Written = len(plan.Write)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// readBudgetsFile reads a budgets file; its problems are printed and end
// the command with status 1.
func readBudgetsFile(e *env, file string) ([]config.Budget, []int, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	budgets, lines, ps := config.ReadBudgets(f, file)
	if len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintln(e.stdout, p.Error())
		}
		fmt.Fprintf(e.stderr, "%s has %d problem(s); nothing was written\n", file, len(ps))
		return nil, nil, exitCode(exitFailure)
	}
	return budgets, lines, nil
}

// controlBudgets decodes the control topic's newest records (unreadable
// ones are left out: the workers ignore them too) and returns them by
// name, with the budgets in force over base: base overlaid with them.
func controlBudgets(latest map[string][]byte, base []config.Budget) (map[string]control.Record, []config.Budget) {
	current := make(map[string]control.Record, len(latest))
	for name, v := range latest {
		if r, err := control.Decode([]byte(name), v); err == nil {
			current[name] = r
		}
	}
	known := make([]config.Budget, 0, len(base)+len(current))
	for _, b := range base {
		if _, over := current[b.Name]; !over {
			known = append(known, b)
		}
	}
	for _, r := range current {
		if r.Op == control.OpSet {
			known = append(known, r.Budget)
		}
	}
	return current, known
}

// writeMany produces the definitions of bs to topic, batched by the
// client (up to 1 MB a batch), and waits for every acknowledgement.
func (c *controlFlags) writeMany(ctx context.Context, topic string, bs []config.Budget) error {
	opts, err := c.kf.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(len(bs)+1))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	var failed atomic.Int64
	var first atomic.Pointer[error]
	for _, b := range bs {
		key, val, err := control.EncodeSet(b)
		if err != nil {
			return err
		}
		cl.Produce(pctx, &kgo.Record{Topic: topic, Key: key, Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				first.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(pctx); err != nil {
		return fmt.Errorf("write to %s: %w", topic, err)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("write to %s: %d of %d records failed, the first with: %w", topic, n, len(bs), *first.Load())
	}
	return nil
}
