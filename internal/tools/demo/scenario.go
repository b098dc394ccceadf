package demo

import (
	"math"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/tools/loadgen"
	"github.com/throttler/throttler/splitter"
)

// The demo's topics and group.
const (
	group          = "demo"
	topicEvents    = "demo.events"
	topicClicks    = "demo.clicks"
	topicPassed    = "demo.passed"
	topicControl   = "demo.control"
	topicTreatment = "demo.treatment"
	topicDead      = "demo.dead-letter"
	topicStats     = "demo.stats"

	layerName      = "ranking"
	experimentName = "new-ranking"
)

// outputTopics are the topics passed events go to.
var outputTopics = []string{topicPassed, topicControl, topicTreatment}

// campaign is one budget of the demo: its share of the traffic (0 for a
// parent, which events never name) and the fraction of its own traffic
// its target lets pass (for a reward budget: of its traffic converted into
// rewards).
type campaign struct {
	name     string
	weight   float64 // relative share of the events
	fraction float64 // target / expected traffic in the window
	kind     config.Kind
	scored   bool
	parent   string
	children []string // for a parent: the campaigns under it
}

// campaigns is the demo's scenario. Events name campaigns in proportion
// to their weights. clicks-goal, a reward budget, takes twice the traffic
// of the others: the rewards still in flight when its last useful pass is
// made are random (Poisson), about ±sqrt(n) for n of them, and at the
// defaults (about 67 clicks a second, a 1 s delay, a target of 4,000) that
// is a few tenths of a percent, where a target of 1,200 at 20 a second
// ended outside ±1% in 13 of 100 simulated runs (docs/pacing.md).
var campaigns = []campaign{
	{name: "spring-sale", weight: 1, fraction: 0.25, kind: config.KindPasses},
	{name: "premium", weight: 1, fraction: 0.10, kind: config.KindPasses, scored: true},
	{name: "clicks-goal", weight: 2, fraction: 0.5, kind: config.KindRewards}, // × RewardShare
	{name: "brand", kind: config.KindPasses, children: []string{"brand-a", "brand-b"}},
	{name: "brand-a", weight: 1, fraction: 0.20, kind: config.KindPasses, parent: "brand"},
	{name: "brand-b", weight: 1, fraction: 0.10, kind: config.KindPasses, parent: "brand"},
}

// loadBudgets are the campaigns events name, with their weights.
func loadBudgets() []loadgen.Budget {
	var out []loadgen.Budget
	for _, c := range campaigns {
		if c.weight > 0 {
			out = append(out, loadgen.Budget{Name: c.name, Weight: c.weight})
		}
	}
	return out
}

// targets returns every campaign's target for a window: its fraction of
// the traffic it is expected to see, a parent the sum of its children's.
func targets(c Config) map[string]float64 {
	var total float64
	for _, x := range campaigns {
		total += x.weight
	}
	out := map[string]float64{}
	for _, x := range campaigns {
		if len(x.children) > 0 {
			continue
		}
		traffic := c.Rate * c.Duration.Seconds() * x.weight / total
		t := traffic * x.fraction
		if x.kind == config.KindRewards {
			t *= c.RewardShare
		}
		out[x.name] = math.Max(1, math.Round(t))
	}
	for _, x := range campaigns {
		for _, ch := range x.children {
			out[x.name] += out[ch]
		}
	}
	return out
}

// workerConfig is the config of every worker of the demo, as a YAML file
// would give it: a 12-partition input topic, exactly-once, the campaigns'
// budgets over [begin, end) and a 50% experiment with two variants.
func workerConfig(c Config, brokers []string, begin, end time.Time) (*config.Config, error) {
	tg := targets(c)
	cfg := &config.Config{
		Brokers: brokers,
		Group:   group,
		Topics: config.Topics{
			Input:      []string{topicEvents},
			Rewards:    []string{topicClicks},
			Output:     topicPassed,
			DeadLetter: topicDead,
			Stats:      topicStats,
			Partitions: c.Partitions,
		},
		Delivery:     config.DeliveryExactlyOnce,
		SyncInterval: c.SyncInterval,
		Fields:       config.Fields{Budget: "campaign", Key: "user", ID: "id", Score: "score", Time: "ts"},
		Rewards:      config.Rewards{Budget: "campaign"},
		Layers: []splitter.Layer{{Name: layerName, Experiments: []splitter.Experiment{{
			Name: experimentName, Allocation: 50,
			Variants: []splitter.Variant{
				{Name: "control", Weight: 1, Topic: topicControl},
				{Name: "treatment", Weight: 1, Topic: topicTreatment},
			},
		}}}},
		HTTP: config.HTTP{Listen: "127.0.0.1:0"},
	}
	for _, x := range campaigns {
		cfg.Budgets = append(cfg.Budgets, config.Budget{
			Name: x.name, Target: tg[x.name], Begin: begin, End: end,
			Kind: x.kind, Scored: x.scored, Parent: x.parent,
		})
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
