package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/internal/defaults"
	"github.com/throttler/throttler/pipeline"
	"github.com/throttler/throttler/splitter"
)

// Delivery is a delivery guarantee.
type Delivery uint8

// Delivery guarantees.
const (
	// ExactlyOnce writes each partition's outputs, its ledger records and
	// its input offsets in one Kafka transaction (read_committed). The
	// default.
	ExactlyOnce Delivery = iota
	// AtLeastOnce produces, flushes, then commits offsets; a crash between
	// the two duplicates outputs. Faster.
	AtLeastOnce
)

func (d Delivery) String() string {
	if d == AtLeastOnce {
		return "at-least-once"
	}
	return "exactly-once"
}

// Topics names the topics of a worker.
type Topics struct {
	Input      []string // events; required
	Rewards    []string // reward events (clicks, conversions); optional
	Output     string   // passed events not routed to a variant topic; required
	Rejected   string   // rejected events; "" drops and counts them
	DeadLetter string   // bad records; required
	Stats      string   // compacted counter exchange and the partitions' ledgers; required
	Control    string   // compacted budget changes (throttler budget set); "" for none
}

// Limits of the worker that no option changes.
const (
	// DefaultCommitRecords: a transaction (or an offset commit) closes
	// early once this many records were polled in it.
	DefaultCommitRecords = 20000
	// DefaultTuneInterval: how often the flow tree re-tunes from local
	// traffic.
	DefaultTuneInterval = 100 * time.Millisecond
	// DefaultMaxPollRecords bounds the records dispatched to the
	// partitions per poll (the loop takes every record the client has
	// buffered at once and dispatches them in polls of at most this many:
	// see pollAhead).
	DefaultMaxPollRecords = 10000
	// DefaultQueueBatches: how many polled batches may wait for one
	// partition's goroutine before polling blocks.
	DefaultQueueBatches = 4
)

// Defaults of the worker options. Group, CommitInterval and SyncInterval
// are also the config file's (config.DefaultGroup, …, the same values).
const (
	DefaultGroup          = defaults.Group
	DefaultCommitInterval = defaults.CommitInterval
	DefaultSyncInterval   = defaults.SyncInterval
	// DefaultSeriesIdle: the metric series of a budget not active on the
	// worker for this long are deleted.
	DefaultSeriesIdle = time.Minute
	// DefaultBudgetSeries: at most this many budgets have metric series
	// of their own on a worker (BudgetSeries).
	DefaultBudgetSeries = defaults.BudgetSeries
	// GiveUp: a worker whose transactions keep aborting for refused
	// produces stops after this many aborts over at least this long.
	DefaultGiveUpAborts = 10
	DefaultGiveUpAfter  = 10 * time.Second
	// SessionRestarts: more failed sessions than this within the span
	// stop the worker; a new session starts after the pause.
	DefaultSessionRestarts = 5
	DefaultRestartSpan     = 5 * time.Minute
	DefaultRestartPause    = time.Second
)

// Opt configures a Worker.
type Opt interface{ apply(*cfg) }

type optFunc func(*cfg)

func (f optFunc) apply(c *cfg) { f(c) }

type cfg struct {
	clientOpts       []kgo.Opt
	statsClientOpts  []kgo.Opt // the stats view's client only
	group            string
	topics           Topics
	delivery         Delivery
	txnID            string
	commitInterval   time.Duration
	syncInterval     time.Duration
	laneIdle         time.Duration // 0: 3 sync intervals
	seriesIdle       time.Duration
	budgetSeries     int
	pipeline         func(*pipeline.Pipeline) error
	splitter         *splitter.Splitter
	rewardBudgetPath string
	rewardValuePath  string
	maxReward        float64
	log              zerolog.Logger
	registry         *prometheus.Registry
	now              func() time.Time
	listen           string
	httpSec          HTTPSecurity
	caps             *capsCfg
	variantLimits    []pipeline.VariantLimit
	dedupWindow      int
	onStart          []StartFunc
	giveUpAborts     int
	giveUpAfter      time.Duration
	restarts         int
	restartSpan      time.Duration
	restartPause     time.Duration
	rewardDecoding   []decode.Opt
	readyChecks      []func() error
	parkRetry        time.Duration
}

func defaultCfg() cfg {
	return cfg{
		group:            DefaultGroup,
		delivery:         ExactlyOnce,
		commitInterval:   DefaultCommitInterval,
		syncInterval:     DefaultSyncInterval,
		seriesIdle:       DefaultSeriesIdle,
		budgetSeries:     DefaultBudgetSeries,
		rewardBudgetPath: decode.DefaultBudgetPath,
		parkRetry:        DefaultParkRetry,
		maxReward:        flow.DefaultMaxReward,
		log:              zerolog.Nop(),
		now:              time.Now,
		giveUpAborts:     DefaultGiveUpAborts,
		giveUpAfter:      DefaultGiveUpAfter,
		restarts:         DefaultSessionRestarts,
		restartSpan:      DefaultRestartSpan,
		restartPause:     DefaultRestartPause,
	}
}

func (c *cfg) validate() error {
	bad := func(opt, reason string) error { return &ConfigError{Option: opt, Reason: reason} }
	switch {
	case len(c.clientOpts) == 0:
		return bad("ClientOpts", "no connection options (kgo.SeedBrokers at least)")
	case c.group == "":
		return bad("Group", "empty")
	case len(c.topics.Input) == 0:
		return bad("WithTopics", "no input topic")
	case c.topics.Output == "":
		return bad("WithTopics", "no output topic")
	case c.topics.DeadLetter == "":
		return bad("WithTopics", "no dead-letter topic: bad records must go somewhere")
	case c.topics.Stats == "":
		return bad("WithTopics", "no stats topic")
	case c.commitInterval <= 0:
		return bad("CommitInterval", "must be positive")
	case c.syncInterval <= 0:
		return bad("SyncInterval", "must be positive")
	case c.laneIdle < 0 || c.seriesIdle <= 0:
		return bad("LaneIdle", "lane and series idle spans must be positive")
	case c.budgetSeries < 1:
		return bad("BudgetSeries", "must be at least 1")
	case c.delivery > AtLeastOnce:
		return bad("WithDelivery", "unknown delivery")
	case c.now == nil:
		return bad("WithClock", "nil clock")
	case c.dedupWindow < 0:
		return bad("DedupWindow", "must not be negative")
	case c.giveUpAborts <= 0 || c.giveUpAfter < 0:
		return bad("GiveUp", "aborts must be positive and the window not negative")
	case c.restarts < 0 || c.restartSpan < 0 || c.restartPause < 0:
		return bad("SessionRestarts", "must not be negative")
	case c.parkRetry <= 0:
		return bad("ParkRetry", "must be positive")
	case !(c.maxReward > 0) || c.maxReward > flow.MaxTarget:
		return bad("MaxReward", "must be above 0 and at most flow.MaxTarget")
	}
	if len(c.topics.Rewards) > 0 && c.rewardBudgetPath == "" {
		return bad("RewardPaths", "empty budget path")
	}
	seen := map[string]string{}
	for _, t := range append(append([]string(nil), c.topics.Input...), c.topics.Rewards...) {
		if t == "" {
			return bad("WithTopics", "empty input or reward topic name")
		}
		if _, dup := seen[t]; dup {
			return bad("WithTopics", "topic "+t+" consumed twice")
		}
		seen[t] = "in"
	}
	for _, t := range []string{c.topics.Output, c.topics.Rejected, c.topics.DeadLetter, c.topics.Stats} {
		if seen[t] == "in" {
			return bad("WithTopics", "topic "+t+" is both consumed and written")
		}
	}
	if c.laneIdle == 0 {
		c.laneIdle = 3 * c.syncInterval
	}
	if c.txnID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.txnID = c.group + "-" + hex.EncodeToString(b[:])
	}
	return nil
}

// ClientOpts sets the kgo connection options (seed brokers, TLS, SASL,
// dialer, timeouts) shared by the worker's clients. Required. The worker
// adds its own group, consuming and transactional options, and
// kgo.MetadataMinAge(MetadataMinAge) ahead of these (so that they may set
// another).
func ClientOpts(opts ...kgo.Opt) Opt {
	return optFunc(func(c *cfg) { c.clientOpts = append(c.clientOpts, opts...) })
}

// MetadataMinAge is the least time between two metadata requests of a
// worker's clients (kgo's default is 5 s). A client that lost its broker
// (a broker restart) produces again only once its metadata is refreshed:
// with 5 s, a worker's transaction waited that long after the broker was
// back, its group session was lost meanwhile, and its partitions stood
// still for 6 to 8 s after a 2 s restart (about 3.5 s with 500 ms).
// Refreshes are triggered by errors; in the steady state metadata is
// refreshed every 5 minutes (kgo's MetadataMaxAge) whatever this is.
const MetadataMinAge = 500 * time.Millisecond

// Group sets the consumer group. Default DefaultGroup ("throttler").
func Group(g string) Opt { return optFunc(func(c *cfg) { c.group = g }) }

// WithTopics sets the topics. Input, Output, DeadLetter and Stats are
// required.
func WithTopics(t Topics) Opt { return optFunc(func(c *cfg) { c.topics = t }) }

// WithDelivery sets the delivery guarantee. Default ExactlyOnce.
func WithDelivery(d Delivery) Opt { return optFunc(func(c *cfg) { c.delivery = d }) }

// TransactionalID sets the transactional id of an exactly-once worker. It
// must be unique among live workers; reusing a crashed worker's id fences
// its zombie. Default: the group, a dash and 12 random hex digits.
func TransactionalID(id string) Opt { return optFunc(func(c *cfg) { c.txnID = id }) }

// CommitInterval sets how often a transaction (or an offset commit)
// closes. Default DefaultCommitInterval (100ms).
func CommitInterval(d time.Duration) Opt { return optFunc(func(c *cfg) { c.commitInterval = d }) }

// SyncInterval sets how often the worker re-tunes from its peers' counters
// on the stats topic, writes the heartbeats of its idle partitions and its
// status (its partitions write their changed counters at every commit).
// Default DefaultSyncInterval (1s).
func SyncInterval(d time.Duration) Opt { return optFunc(func(c *cfg) { c.syncInterval = d }) }

// LaneIdle sets how long a partition keeps the lane of a budget that has
// no event there: a lane idle this long, whose counters are committed, is
// released after a sync (flow.Source.Release), and opens again from the
// partition's ledger at the budget's next event. Default three sync
// intervals: a budget with an event every sync interval or so keeps its
// lane (each reopening costs a restore from the ledger and, when the
// budget's controller was dropped meanwhile, a read of its peers), and
// flow's own horizon for a silent source is three syncs (StaleAfter), so a
// lane idle that long holds nothing flow still uses but its counters,
// which live on in the ledger. Memory then follows the budgets active in
// the last few seconds.
func LaneIdle(d time.Duration) Opt { return optFunc(func(c *cfg) { c.laneIdle = d }) }

// SeriesIdle sets how long the per-budget metric series of a budget that
// is no longer active on the worker (no event counted, no controller) are
// kept before they are deleted, so that /metrics holds the budgets active
// here rather than every budget ever seen. Default DefaultSeriesIdle (1m):
// a scrape every 15 s still sees a budget's last counts before its series
// go.
func SeriesIdle(d time.Duration) Opt { return optFunc(func(c *cfg) { c.seriesIdle = d }) }

// BudgetSeries sets how many budgets, at most, have per-budget metric
// series of their own on the worker (throttler_offered_total,
// throttler_passed_total, throttler_rejected_total, throttler_rewards_total
// and the five pacing gauges). Budgets become active beyond it count in
// the counters' series of OverflowBudget (the empty budget label) and have
// no gauges, until a sweep (SeriesIdle) deletes idle budgets' series and
// makes room. Sums over the budget label stay exact. Default
// DefaultBudgetSeries (1,000): about ten series a budget, so that a
// scrape stays near 10,000 series however many budgets are active. Every
// series is gathered, sorted and encoded at every scrape, at a cost that
// grows faster than their number (go test -bench Scrape ./consumer).
func BudgetSeries(n int) Opt { return optFunc(func(c *cfg) { c.budgetSeries = n }) }

// WithSplitter sets the experiment splitter. Default nil: no experiments.
func WithSplitter(s *splitter.Splitter) Opt { return optFunc(func(c *cfg) { c.splitter = s }) }

// CustomizePipeline lets the caller change the standard pipeline (insert,
// replace or append stages) before the worker starts. Default none.
func CustomizePipeline(fn func(*pipeline.Pipeline) error) Opt {
	return optFunc(func(c *cfg) { c.pipeline = fn })
}

// RewardPaths sets the JSON paths of a reward event's budget and value.
// Default "budget" and "" (every reward counts 1; a missing value field
// also counts 1).
func RewardPaths(budget, value string) Opt {
	return optFunc(func(c *cfg) { c.rewardBudgetPath, c.rewardValuePath = budget, value })
}

// WithLogger sets the logger. Default zerolog.Nop().
func WithLogger(l zerolog.Logger) Opt { return optFunc(func(c *cfg) { c.log = l }) }

// WithRegistry sets the Prometheus registry the worker's metrics are
// registered in. Default: a new registry per worker (see Worker.Gatherer).
func WithRegistry(r *prometheus.Registry) Opt { return optFunc(func(c *cfg) { c.registry = r }) }

// WithClock sets the clock. Default time.Now.
func WithClock(now func() time.Time) Opt { return optFunc(func(c *cfg) { c.now = now }) }

// HTTPListen makes the worker serve /metrics, /livez and /readyz on addr
// (":0" picks a free port; see Worker.HTTPAddr). Default "": no server.
func HTTPListen(addr string) Opt { return optFunc(func(c *cfg) { c.listen = addr }) }

// HTTPGuard sets the TLS, credentials and allowed host names of the
// HTTP server (HTTPListen). Default: plain HTTP without credentials,
// answering IP addresses and loopback names only.
func HTTPGuard(s HTTPSecurity) Opt { return optFunc(func(c *cfg) { c.httpSec = s }) }

// ClientTuning returns the kgo options the worker puts before ClientOpts on
// its consuming client (ClientOpts may override them). Exported so that a
// reference client (the bench's passthrough) can use the very same.
//
// A fetch waits at the broker for FetchMinBytes, or for as long as the
// commit interval (DefaultCommitInterval here; the worker uses its own,
// when shorter): kgo's default of one byte answers every fetch with the
// few records that arrived since the last one, and at a few thousand
// events a second the worker spent more CPU on fetch round trips than on
// the events. Records wait at most the commit interval more, about what
// they wait for their commit anyway.
func ClientTuning() []kgo.Opt {
	return []kgo.Opt{kgo.FetchMinBytes(FetchMinBytes), kgo.FetchMaxWait(DefaultCommitInterval)}
}

// FetchMinBytes is how much a fetch of the worker's consuming client waits
// for at the broker (ClientTuning), and a fetch of its stats view a
// quarter of it.
const FetchMinBytes = 64 << 10

// fetchMaxWait is how long a fetch waits at the broker for FetchMinBytes:
// the commit interval, at most DefaultCommitInterval and at least kgo's
// minimum of 10 ms.
func fetchMaxWait(commit time.Duration) time.Duration {
	return max(min(commit, DefaultCommitInterval), 10*time.Millisecond)
}

// viewFetchMaxWait is how long a fetch of the stats view waits at the
// broker for FetchMinBytes/4: half the sync interval, at most 500 ms and
// at least kgo's 10 ms. The controllers read the peers' reports once per
// sync interval (Tree.Sync) and count a report by its own instant, so a
// report that reaches the view up to half a sync interval late costs no
// accuracy the simulator sees (its scenarios show reports 300 ms to 2 s
// late); a nearly idle worker then fetches its view twice a second
// instead of ten times. Under traffic the minimum bytes end the wait
// sooner.
func viewFetchMaxWait(sync time.Duration) time.Duration {
	return max(min(sync/2, 500*time.Millisecond), 10*time.Millisecond)
}

// ProducerLimits returns the kgo options that let the worker's producer
// write a record of up to 1 MiB (kgo's default batch limit is 1,000,012
// bytes, less than Kafka's default message.max.bytes of 1,048,588), so
// that an event of DefaultMaxBytes with the worker's headers fits. The
// worker puts them before ClientOpts, which may override them.
func ProducerLimits() []kgo.Opt {
	return []kgo.Opt{kgo.ProducerBatchMaxBytes(1 << 20)}
}

// DedupWindow makes the worker dead-letter events whose id (the
// decoder's IDPath, which must be set) repeats an id among the last n
// distinct ids of the same partition (pipeline.ReasonDuplicateID; see
// pipeline.DedupStage for the exact rule). The stage runs right after
// decode. Default 0: off.
func DedupWindow(n int) Opt { return optFunc(func(c *cfg) { c.dedupWindow = n }) }

// WithCaps applies per-key caps to every event between the score and the
// decide stages (pipeline.Caps), keeping their state in changelog, a
// compacted topic partitioned like the input (created by EnsureTopics).
// Default: no caps.
func WithCaps(changelog string, caps ...pipeline.CapSpec) Opt {
	return optFunc(func(c *cfg) {
		c.caps = &capsCfg{changelog: changelog, specs: append([]pipeline.CapSpec(nil), caps...)}
	})
}

type capsCfg struct {
	changelog string
	specs     []pipeline.CapSpec
}

// WithVariantLimits sets the variant limits (pipeline.VariantLimitStage);
// each limit's budget must be in the worker's flow tree. Default none.
func WithVariantLimits(limits ...pipeline.VariantLimit) Opt {
	return optFunc(func(c *cfg) { c.variantLimits = append([]pipeline.VariantLimit(nil), limits...) })
}

// StartFunc starts something beside the worker: Run calls it once the
// stats view has caught up and before the worker joins its group, fails
// if it fails, and calls stop when Run returns. The control topic's
// follower (internal/controlfeed, wired by package app) is one: the
// budget changes are read to the end of the topic before any event.
type StartFunc func(ctx context.Context, w *Worker) (stop func(), err error)

// OnStart adds a StartFunc. Default none.
func OnStart(fn StartFunc) Opt { return optFunc(func(c *cfg) { c.onStart = append(c.onStart, fn) }) }

// GiveUp sets when a worker whose transactions keep aborting because the
// brokers refuse a produce for good (not authorized, record too large)
// stops with that error: after aborts aborted transactions in a row over
// at least window, with no pause of window between two. Default
// DefaultGiveUpAborts (10) over DefaultGiveUpAfter (10s).
func GiveUp(aborts int, window time.Duration) Opt {
	return optFunc(func(c *cfg) { c.giveUpAborts, c.giveUpAfter = aborts, window })
}

// SessionRestarts sets how the worker replaces a failed session (its
// producer fenced, or the brokers unreachable at a transaction's end): a
// new session starts after pause, and more than max failures within span
// stop the worker. Default DefaultSessionRestarts (5) within
// DefaultRestartSpan (5m), DefaultRestartPause (1s) apart.
func SessionRestarts(max int, span, pause time.Duration) Opt {
	return optFunc(func(c *cfg) { c.restarts, c.restartSpan, c.restartPause = max, span, pause })
}

// RewardDecoding adds options to the decoder of reward events, after its
// budget path (RewardPaths) and the input decoder's size and depth
// limits: the reward topics' formats and schemas, and for Avro and
// Protobuf the value path (decode.Paths). Default none.
func RewardDecoding(opts ...decode.Opt) Opt {
	return optFunc(func(c *cfg) { c.rewardDecoding = append(c.rewardDecoding, opts...) })
}

// ReadyCheck adds a condition to Ready (and /readyz): check returns why
// the worker is not ready, nil when it is; the schema registry's
// reachability is one. Default none.
func ReadyCheck(check func() error) Opt {
	return optFunc(func(c *cfg) { c.readyChecks = append(c.readyChecks, check) })
}

// ParkRetry sets how often the worker reads again the ledgers of its
// parked partitions (park.go) and starts those that restore whole.
// Default DefaultParkRetry (10s).
func ParkRetry(d time.Duration) Opt { return optFunc(func(c *cfg) { c.parkRetry = d }) }

// MaxReward sets the largest value a reward event may carry: one above it
// goes to the dead-letter topic (reason reward_out_of_range) instead of
// being credited. Default flow.DefaultMaxReward (1e6); at most
// flow.MaxTarget.
func MaxReward(v float64) Opt { return optFunc(func(c *cfg) { c.maxReward = v }) }
