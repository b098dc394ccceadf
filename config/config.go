package config

import (
	"time"

	"github.com/throttler/throttler/splitter"
)

// Config is a worker's configuration: the YAML file, decoded.
//
// A Config built in code rather than parsed should go through
// ApplyDefaults and Validate before use; Parse and Load do both.
type Config struct {
	// Brokers are the seed brokers, host:port each. Required.
	Brokers []string `yaml:"brokers"`
	// Security configures TLS and SASL for every Kafka connection.
	// Default: plaintext, no authentication.
	Security Security `yaml:"security"`
	// Group is the consumer group of the workers. Default "throttler".
	Group string `yaml:"group"`
	// Topics names every topic the worker reads and writes.
	Topics Topics `yaml:"topics"`
	// Delivery is the delivery guarantee. Default DeliveryExactlyOnce.
	Delivery Delivery `yaml:"delivery"`
	// GroupProtocol is the consumer group protocol the workers join
	// with. Default DefaultGroupProtocol.
	GroupProtocol GroupProtocol `yaml:"group_protocol"`
	// SyncInterval is how often a worker publishes its counters and re-tunes
	// from its peers'. At least 10ms. Default 1s.
	SyncInterval time.Duration `yaml:"sync_interval"`
	// CommitInterval is how often a transaction (exactly-once) or an offset
	// commit (at-least-once) closes. Positive. Default 100ms.
	CommitInterval time.Duration `yaml:"commit_interval"`
	// Fields locates the values the worker reads in each event.
	Fields Fields `yaml:"fields"`
	// Format says how the input and reward topics are encoded (see
	// formats.go). Default: JSON.
	Format Format `yaml:"format"`
	// SchemaRegistry serves the schemas of Avro and Protobuf topics.
	SchemaRegistry SchemaRegistry `yaml:"schema_registry"`
	// DedupWindow turns on duplicate detection: an event whose id
	// (fields.id, then required) repeats one of the last DedupWindow
	// distinct ids of its partition goes to the dead-letter topic with
	// reason duplicate_id. Per partition and in memory (see
	// pipeline.DedupStage). Default 0: off.
	DedupWindow int `yaml:"dedup_window"`
	// Rewards locates the values the worker reads in each reward event.
	Rewards Rewards `yaml:"rewards"`
	// Budgets are the flow budgets; at least one, here or in BudgetsFile.
	Budgets []Budget `yaml:"budgets"`
	// BudgetsFile names a file of more budgets, one JSON object a line
	// (see ReadBudgets), for configs of thousands of budgets. Parse and
	// Load append its budgets to Budgets, after those of the YAML; a
	// relative path is relative to the config file's directory (Load) or
	// to the working directory (Parse). Validate does not read it: it
	// checks Budgets as they are. Optional.
	BudgetsFile string `yaml:"budgets_file"`
	// Caps are per-key frequency caps (see caps.go); optional.
	Caps []Cap `yaml:"caps"`
	// Layers are the experiment layers of the splitter; optional.
	Layers []splitter.Layer `yaml:"layers"`
	// HTTP configures the metrics and health endpoint.
	HTTP HTTP `yaml:"http"`
	// Log configures the worker's logs.
	Log Log `yaml:"log"`
	// Timeouts tune how soon a lost worker is noticed; optional.
	Timeouts Timeouts `yaml:"timeouts"`

	// lines maps field paths to the YAML lines they were read from; nil
	// for a Config built in code.
	lines map[string]int
	// file says which budgets came from BudgetsFile; nil when none did.
	file *fileBudgets
}

// Topics names the topics of a worker.
type Topics struct {
	// Input topics carry the events to throttle. Required, one or more.
	Input []string `yaml:"input"`
	// Rewards topics carry reward events (clicks, conversions). Optional.
	Rewards []string `yaml:"rewards"`
	// Output receives the events that pass (unless a variant routes them
	// elsewhere). Required.
	Output string `yaml:"output"`
	// Rejected receives rejected events with reason headers. Empty means
	// rejected events are dropped and counted.
	Rejected string `yaml:"rejected"`
	// DeadLetter receives records that cannot be decoded. Default
	// "<group>.dead-letter".
	DeadLetter string `yaml:"dead_letter"`
	// Stats is the compacted topic of the counter exchange. Default
	// "<group>.stats".
	Stats string `yaml:"stats"`
	// Caps is the compacted changelog of the caps' state, partitioned like
	// the input. Default "<group>.caps".
	Caps string `yaml:"caps"`
	// Control is the compacted topic of budget changes made while the
	// workers run (throttler budget set/delete). Default
	// "<group>.changes"; empty in a Config built in code means none.
	Control string `yaml:"control"`
	// Partitions is the partition count of the topics the worker creates
	// on start. 0 (the default) means as many as the first input topic, or
	// DefaultPartitions when that is unknown; see PartitionsFor.
	Partitions int32 `yaml:"partitions"`
}

// Delivery is a delivery guarantee.
type Delivery string

// Delivery guarantees.
const (
	// DeliveryExactlyOnce writes outputs and input offsets in one
	// transaction; readers must read committed records. The default.
	DeliveryExactlyOnce Delivery = "exactly-once"
	// DeliveryAtLeastOnce commits offsets after the outputs are written; a
	// crash can duplicate outputs.
	DeliveryAtLeastOnce Delivery = "at-least-once"
)

// GroupProtocol is a consumer group protocol.
type GroupProtocol string

// Group protocols.
const (
	// GroupProtocolClassic is the protocol of every Kafka release: the
	// members join, one of them assigns the partitions (cooperative
	// sticky), and the session, heartbeat and rebalance timeouts are the
	// worker's (timeouts).
	GroupProtocolClassic GroupProtocol = "classic"
	// GroupProtocolConsumer is KIP-848's protocol (Kafka 4.0 and later;
	// 4.3 or later advised): the broker assigns the partitions and
	// decides the session timeout and heartbeat interval
	// (group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms).
	// Against a broker without it, the client joins with the classic
	// protocol.
	GroupProtocolConsumer GroupProtocol = "consumer"
)

// Fields holds dot-separated JSON paths into an event ("a.b" is field b of
// object a). An empty path means the value is absent.
type Fields struct {
	// Budget names the budget the event spends. Required.
	Budget string `yaml:"budget"`
	// Key is the user (or other entity) the event is about, for experiments
	// and caps. Empty means the record key.
	Key string `yaml:"key"`
	// ID identifies the event, for logs and deduplication. Optional.
	ID string `yaml:"id"`
	// Score is the event's score, for scored budgets. Optional; exclusive
	// with ScoreExpr.
	Score string `yaml:"score"`
	// ScoreExpr computes the score from the event's fields. Optional;
	// exclusive with Score.
	ScoreExpr string `yaml:"score_expr"`
	// Time is the event's time. Empty means the record timestamp.
	Time string `yaml:"time"`
}

// Rewards holds dot-separated JSON paths into a reward event.
type Rewards struct {
	// Budget names the budget the reward counts for. Required when
	// Topics.Rewards is set.
	Budget string `yaml:"budget"`
	// Value is the reward's value. Empty means each reward counts 1.
	Value string `yaml:"value"`
	// MaxValue is the largest value one reward may carry; a reward above
	// it is dead-lettered (reward_out_of_range). Default
	// flow.DefaultMaxReward (1e6); at most flow.MaxTarget.
	MaxValue float64 `yaml:"max_value"`
}

// Budget is one flow budget; FlowBudgets converts it to a flow.Budget.
//
// A budget has either a window (Begin and End: spend Target between them,
// finishing Reserve before End) or a Period (at most Target per Period,
// periods aligned to the Unix epoch), never both.
type Budget struct {
	// Name identifies the budget; events name it in Fields.Budget.
	// Required, unique.
	Name string `yaml:"name"`
	// Target is how many passes (or rewards, for KindRewards) the budget
	// allows. Positive and finite.
	Target float64 `yaml:"target"`
	// Begin and End bound the window, RFC 3339 in YAML.
	Begin time.Time `yaml:"begin,omitempty"`
	End   time.Time `yaml:"end,omitempty"`
	// Reserve makes a window budget finish this long before End. At least
	// 0 and shorter than the window. Default 0.
	Reserve time.Duration `yaml:"reserve,omitempty"`
	// Period makes a period budget: Target per Period.
	Period time.Duration `yaml:"period,omitempty"`
	// Kind says what Target counts. Default KindPasses.
	Kind Kind `yaml:"kind"`
	// Conversion and RewardDelay are a rewards budget's prior: about how
	// many rewards a pass brings (at least 0, finite) and how long after
	// it (at least 0). They pace the start, before rewards tell; the
	// ratio and delay fitted on the rewards take over as they come.
	// Optional (0: unknown); KindRewards only.
	Conversion  float64       `yaml:"conversion,omitempty"`
	RewardDelay time.Duration `yaml:"reward_delay,omitempty"`
	// Scored turns on score-tiered selection: the highest scores pass
	// first. It needs Fields.Score or Fields.ScoreExpr.
	Scored bool `yaml:"scored"`
	// Parent names the budget above this one; a pass must fit both.
	Parent string `yaml:"parent,omitempty"`
	// Action is what happens to an event over the budget: ActionReject
	// (the default) or ActionDelay (backpressure: pause the partition until
	// the next period; period budgets of passes only, not scored, not
	// nested).
	Action Action `yaml:"action,omitempty"`
}

// Kind says what a budget's target counts.
type Kind string

// Budget kinds.
const (
	// KindPasses counts events that pass. The default.
	KindPasses Kind = "passes"
	// KindRewards counts rewards reported on the reward topics.
	KindRewards Kind = "rewards"
)

// HTTP configures the metrics and health endpoint (docs/operations.md,
// HTTP endpoints).
type HTTP struct {
	// Listen is the host:port to listen on; the host may be empty (or
	// 0.0.0.0) for all interfaces. Default "127.0.0.1:9090": loopback
	// only.
	Listen string `yaml:"listen"`
	// AllowedHosts are the names (without port) the server may be
	// reached by, besides localhost and IP addresses: a request naming
	// another host is refused, against DNS rebinding. Optional.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TLS makes the server speak HTTPS only. Optional.
	TLS HTTPTLS `yaml:"tls"`
	// Auth makes /metrics require credentials. Optional.
	Auth HTTPAuth `yaml:"auth"`
	// BudgetSeries is how many budgets, at most, have per-budget series
	// of their own in /metrics (consumer.BudgetSeries); the others count
	// in series with an empty budget label. Default
	// DefaultBudgetSeries (1,000).
	BudgetSeries int `yaml:"budget_series"`
}

// LogFormats are the values of log.format; internal/logx writes them.
var LogFormats = []string{"json", "console"}

// LogLevels are the values of log.level, from the most to the least
// verbose; internal/logx reads them.
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Log configures logging (see internal/logx).
type Log struct {
	// Format is "json" (the default) or "console".
	Format string `yaml:"format"`
	// Level is one of trace, debug, info, warn, error. Default "info".
	Level string `yaml:"level"`
}
