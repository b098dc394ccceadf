package decode

// Opt configures a Decoder.
type Opt interface{ apply(*decodeCfg) }

type optFunc func(*decodeCfg)

func (o optFunc) apply(c *decodeCfg) { o(c) }

type decodeCfg struct {
	budgetPath string
	keyPath    string
	requireKey bool
	idPath     string
	scorePath  string
	scoreExpr  string
	timePath   string
	maxBytes   int
	maxDepth   int
	framed     framedCfg // formats, schemas and extra paths (format.go)
}

// BudgetPath sets the JSON path (gjson syntax) of the field naming the
// event's budget. Default "budget". The field is required.
func BudgetPath(p string) Opt { return optFunc(func(c *decodeCfg) { c.budgetPath = p }) }

// KeyPath sets the JSON path of the event's key (the unit of per-key caps
// and of experiment bucketing). Default "": the Kafka record key.
func KeyPath(p string) Opt { return optFunc(func(c *decodeCfg) { c.keyPath = p }) }

// RequireKey makes an absent, null or empty key a bad record
// (ReasonMissingKey). Default false.
func RequireKey(required bool) Opt {
	return optFunc(func(c *decodeCfg) { c.requireKey = required })
}

// IDPath sets the JSON path of the event's id (a string or number, used in
// logs and tests). Default "": no id. When set, the field is required.
func IDPath(p string) Opt { return optFunc(func(c *decodeCfg) { c.idPath = p }) }

// ScorePath sets the JSON path of a numeric score. Default "": no score
// field (score 0 unless ScoreExpr is set). When set, the field is required.
func ScorePath(p string) Opt { return optFunc(func(c *decodeCfg) { c.scorePath = p }) }

// ScoreExpr sets a score expression (see Expr); it takes precedence over
// ScorePath. Default "": none.
func ScoreExpr(src string) Opt { return optFunc(func(c *decodeCfg) { c.scoreExpr = src }) }

// TimePath sets the JSON path of the event time: a number of Unix
// milliseconds or an RFC 3339 string. Default "": the record timestamp.
// When set, the field is required.
func TimePath(p string) Opt { return optFunc(func(c *decodeCfg) { c.timePath = p }) }

// MaxBytes sets the largest record value accepted, in bytes. Default
// DefaultMaxBytes (1,000,000). A larger value needs larger
// message.max.bytes on the output topics and ProducerBatchMaxBytes in
// ClientOpts.
func MaxBytes(n int) Opt { return optFunc(func(c *decodeCfg) { c.maxBytes = n }) }

// MaxDepth sets the deepest nesting of objects and arrays accepted. Default
// DefaultMaxDepth (32).
func MaxDepth(n int) Opt { return optFunc(func(c *decodeCfg) { c.maxDepth = n }) }
