package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/stats"
)

// budgetFlagOf maps a budget's YAML key (as config.CheckBudget names it)
// to the flag that sets it.
var budgetFlagOf = map[string]string{
	"name": "name", "target": "target", "begin": "begin", "end": "end",
	"reserve": "reserve", "period": "period", "kind": "kind", "scored": "scored", "parent": "parent",
	"action": "action", "conversion": "conversion", "reward_delay": "reward-delay",
}

// controlFlags are the flags every budget command shares: where the
// control topic is.
type controlFlags struct {
	kf      *kafkaFlags
	group   *string
	topic   *string
	timeout *time.Duration
}

func addControlFlags(fs *flag.FlagSet) *controlFlags {
	return &controlFlags{
		kf:      addKafkaFlags(fs, "127.0.0.1:9092"),
		group:   fs.String("group", config.DefaultGroup, "the workers' consumer `group`; the control topic is <group>.changes"),
		topic:   fs.String("control-topic", "", "control `topic` (default <group>.changes; the config's topics.control)"),
		timeout: fs.Duration("timeout", 30*time.Second, "give up reaching the brokers after this long"),
	}
}

// open checks the flags, then connects and makes sure the control topic
// exists (compacted, one partition).
func (c *controlFlags) open(ctx context.Context) (*kgo.Client, string, error) {
	topic := *c.topic
	if topic == "" {
		if *c.group == "" {
			return nil, "", badFlag("group", "must not be empty")
		}
		topic = config.ControlTopic(*c.group)
	}
	if *c.timeout <= 0 {
		return nil, "", badFlag("timeout", "must be positive, got %v", *c.timeout)
	}
	opts, err := c.kf.opts()
	if err != nil {
		return nil, "", err
	}
	if err := checkFatal(ctx, opts); err != nil {
		return nil, "", err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, "", err
	}
	sctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	if err := stats.EnsureTopics(sctx, kadm.NewClient(cl), control.Topic(topic)); err != nil {
		cl.Close()
		return nil, "", fmt.Errorf("control topic %s: %w", topic, err)
	}
	return cl, topic, nil
}

// write produces one control record and waits for the brokers'
// acknowledgement.
func (c *controlFlags) write(ctx context.Context, e *env, key, val []byte, what string) error {
	cl, topic, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	r, err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Key: key, Value: val}).First()
	if err != nil {
		return fmt.Errorf("write to %s: %w", topic, err)
	}
	fmt.Fprintf(e.stdout, "%s (topic %s, partition %d, offset %d)\n", what, topic, r.Partition, r.Offset)
	return nil
}

var budgetSetCmd = &command{
	name:    "budget set",
	summary: "add or change a budget on the running workers",
	doc: `Writes a budget's definition to the control topic; every worker of the
group applies it within one sync interval, without a restart. The
definition replaces the config file's budget of that name, or adds one. A
changed budget keeps its counters: a new target or window is paced from
what was already achieved.

The budget is checked with the config file's rules; a bad value exits 2
naming its flag, and nothing is written. Exits 0 once the brokers have
acknowledged the record. Workers refuse (log, and count in
throttler_control_records_total) what they cannot run: a parent that does
not exist, a scored budget without a score field, a rewards budget without
reward topics.`,
	setup: func(fs *flag.FlagSet) action {
		cf := addControlFlags(fs)
		var b config.Budget
		fs.StringVar(&b.Name, "name", "", "budget `name` (required)")
		fs.Float64Var(&b.Target, "target", 0, "passes (or rewards) the budget allows, per window or `per period` (required)")
		timeFlag := func(name, usage string, dst *time.Time) {
			fs.Func(name, usage, func(s string) error {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					return fmt.Errorf("want an RFC 3339 time such as 2026-11-22T10:00:00Z, got %q", s)
				}
				*dst = t
				return nil
			})
		}
		timeFlag("begin", "window start, RFC 3339 `time` (with --end)", &b.Begin)
		timeFlag("end", "window end, RFC 3339 `time` (with --begin)", &b.End)
		fs.DurationVar(&b.Reserve, "reserve", 0, "finish this `long` before --end")
		fs.DurationVar(&b.Period, "period", 0, "a period budget: --target per `period` (instead of --begin/--end)")
		kind := fs.String("kind", string(config.KindPasses), "what --target counts: passes or rewards")
		fs.Float64Var(&b.Conversion, "conversion", 0, "rewards budgets: rewards per pass expected until rewards tell (optional `prior`)")
		fs.DurationVar(&b.RewardDelay, "reward-delay", 0, "rewards budgets: how `long` after a pass its rewards come, expected until rewards tell (optional prior)")
		fs.BoolVar(&b.Scored, "scored", false, "highest scores pass first")
		fs.StringVar(&b.Parent, "parent", "", "`name` of the budget above this one")
		action := fs.String("action", "", "over the budget: reject (default) or delay (pause the partitions until the next period; period budgets only)")
		return func(ctx context.Context, e *env) error {
			b.Kind, b.Action = config.Kind(*kind), config.Action(*action)
			if b.Name == "" {
				return &usageError{"flag --name is required"}
			}
			if ps := config.CheckBudget(b); len(ps) > 0 {
				p := ps[0]
				if f, ok := budgetFlagOf[p.Path]; ok {
					return badFlag(f, "%s", p.Reason)
				}
				return &usageError{p.Reason + ": use flags --begin and --end, or --period"}
			}
			key, val, err := control.EncodeSet(b)
			if err != nil {
				return err
			}
			return cf.write(ctx, e, key, val, fmt.Sprintf("budget %s set", b.Name))
		}
	},
}

var budgetDeleteCmd = &command{
	name:    "budget delete",
	summary: "delete a budget on the running workers",
	doc: `Writes a deletion of the budget to the control topic, kept by compaction:
every worker of the group stops the budget within one sync interval, even
if its config file defines it, and events naming it go to the dead-letter
topic as of unknown budget. A budget that is another's parent stays until
its children move (workers log and count the refusal). Exits 0 once the
brokers have acknowledged the record. 'throttler budget reset' undoes it.`,
	setup: byName(control.EncodeDelete, "budget %s deleted"),
}

var budgetResetCmd = &command{
	name:    "budget reset",
	summary: "drop the control topic's word on a budget: the config file's definition holds",
	doc: `Writes a tombstone for the budget to the control topic: every worker goes
back to its config file's definition of the budget (or to no such budget)
within one sync interval. Exits 0 once the brokers have acknowledged it.`,
	setup: byName(func(name string) ([]byte, []byte, error) { return []byte(name), nil, nil },
		"budget %s reset to the config file"),
}

// byName is the setup of a command that writes the record encode makes
// of --name, and prints done (a format of the name) once it is written.
func byName(encode func(name string) (key, val []byte, err error), done string) func(fs *flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		cf := addControlFlags(fs)
		name := fs.String("name", "", "budget `name` (required)")
		return func(ctx context.Context, e *env) error {
			if *name == "" {
				return &usageError{"flag --name is required"}
			}
			key, val, err := encode(*name)
			if err != nil {
				return err
			}
			return cf.write(ctx, e, key, val, fmt.Sprintf(done, *name))
		}
	}
}

var budgetListCmd = &command{
	name:    "budget list",
	summary: "print what the control topic says of each budget",
	doc: `Reads the control topic to its end and prints, one JSON object a line and
by name, the newest record of each budget: its definition, or
{"name":…,"deleted":true}. Budgets only in the config files are not listed;
unreadable records are printed with their error. --name keeps the budgets
whose name matches a glob (path.Match: campaign/0001*).

The lines are written as they are sorted, through a buffer, and the topic is
kept as the newest record value per name: 100,000 budgets take about 20 MB.`,
	setup: func(fs *flag.FlagSet) action {
		cf := addControlFlags(fs)
		pattern := fs.String("name", "", "print only the budgets whose name matches this `glob`")
		return func(ctx context.Context, e *env) error {
			if _, err := path.Match(*pattern, ""); err != nil {
				return badFlag("name", "%v", err)
			}
			latest, _, err := cf.read(ctx)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(latest))
			for n := range latest {
				if ok, _ := path.Match(*pattern, n); *pattern == "" || ok {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			w := bufio.NewWriterSize(e.stdout, 64<<10)
			for _, n := range names {
				v := latest[n]
				if _, err := control.Decode([]byte(n), v); err != nil {
					v, _ = json.Marshal(map[string]string{"name": n, "error": err.Error()})
				}
				w.Write(v)
				w.WriteByte('\n')
			}
			return w.Flush()
		}
	},
}

// read reads the control topic to its end and returns the newest value of
// each budget name (tombstones drop the name) and the topic's name.
func (c *controlFlags) read(ctx context.Context) (map[string][]byte, string, error) {
	cl, topic, err := c.open(ctx)
	if err != nil {
		return nil, "", err
	}
	cl.Close()
	var mu sync.Mutex
	latest := map[string][]byte{}
	opts, _ := c.kf.opts()
	f, err := control.FollowBatches(ctx, topic, opts, func(rs []*kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			if r.Value == nil {
				delete(latest, string(r.Key))
			} else {
				latest[string(r.Key)] = r.Value
			}
		}
	})
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	wctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	if err := f.WaitCaughtUp(wctx); err != nil {
		return nil, "", fmt.Errorf("read %s: %w", topic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return latest, topic, nil
}
