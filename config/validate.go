package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/throttler/throttler/flow"
	"github.com/throttler/throttler/splitter"
)

// Validate checks the config and returns every problem at once, as
// Problems (which wraps ErrInvalid), or nil. It does not apply defaults:
// call ApplyDefaults first on a Config built in code.
//
// It checks: brokers non-empty and host:port each; topics.input non-empty;
// topics.output set; topic names legal for Kafka; that no topic is used for
// two roles that must not share one (outputs and internal topics differ
// from inputs, the dead-letter, stats, caps and control topics from every
// other topic, output from rejected; a variant may use the output topic);
// the delivery, kind and log enums; sync_interval at least 10ms and
// commit_interval positive; fields.budget set, field paths well formed,
// score and score_expr not both set; the rewards section when reward topics
// or reward budgets need it; the budgets (see FlowBudgets); and the layers
// (see splitter.Validate).
func (c *Config) Validate() error {
	v := c.checker()
	v.brokers(c.Brokers)
	for _, p := range c.Security.Check() {
		v.add("security."+p.Field, p.Reason)
	}
	if strings.TrimSpace(c.Group) == "" {
		v.add("group", "must not be empty")
	}
	v.topics(c)
	switch c.Delivery {
	case DeliveryExactlyOnce, DeliveryAtLeastOnce:
	default:
		v.add("delivery", fmt.Sprintf("must be %q or %q, got %q", DeliveryExactlyOnce, DeliveryAtLeastOnce, c.Delivery))
	}
	switch c.GroupProtocol {
	case GroupProtocolClassic, GroupProtocolConsumer:
	default:
		v.add("group_protocol", fmt.Sprintf("must be %q or %q, got %q", GroupProtocolClassic, GroupProtocolConsumer, c.GroupProtocol))
	}
	if c.SyncInterval < MinSyncInterval {
		v.add("sync_interval", fmt.Sprintf("must be at least %v, got %v", MinSyncInterval, c.SyncInterval))
	}
	if c.CommitInterval <= 0 {
		v.add("commit_interval", fmt.Sprintf("must be positive, got %v", c.CommitInterval))
	}
	v.timeouts(c)
	v.fields(c)
	v.formats(c)
	switch {
	case c.DedupWindow < 0:
		v.add("dedup_window", fmt.Sprintf("must be at least 0, got %d", c.DedupWindow))
	case c.DedupWindow > MaxDedupWindow:
		v.add("dedup_window", fmt.Sprintf("must be at most %d ids per partition, got %d", MaxDedupWindow, c.DedupWindow))
	case c.DedupWindow > 0 && c.Fields.ID == "":
		v.add("dedup_window", "needs fields.id: duplicates are found by the event id")
	}
	v.rewards(c)
	v.budgets(c)
	v.caps(c)
	for _, p := range splitter.Validate(c.Layers) {
		v.add(p.Path, p.Reason)
	}
	v.variantLimits(c)
	v.httpSection(c.HTTP)
	if !slices.Contains(LogFormats, c.Log.Format) {
		v.add("log.format", fmt.Sprintf("must be %q or %q, got %q", LogFormats[0], LogFormats[1], c.Log.Format))
	}
	if !slices.Contains(LogLevels, c.Log.Level) {
		v.add("log.level", fmt.Sprintf("must be one of %s, got %q", strings.Join(LogLevels, ", "), c.Log.Level))
	}
	return v.problems.err()
}

// checker collects problems, giving each the line of its field.
type checker struct {
	problems Problems
	lines    map[string]int
	file     *fileBudgets // the budgets of the budgets file, if any
	cfg      *Config      // the config checked, to tell unset fields (see unset)
}

func (c *Config) checker() *checker { return &checker{lines: c.lines, file: c.file, cfg: c} }

func (v *checker) add(path, reason string) {
	if p, ok := v.inFile(path, reason); ok {
		v.problems = append(v.problems, p)
		return
	}
	if v.unset(path) {
		reason = required(reason)
	}
	v.problems = append(v.problems, Problem{Path: path, Reason: reason, Line: v.line(path)})
}

// inFile returns the problem of a path "budgets[i]…" whose budget came
// from the budgets file, named by the file's line.
func (v *checker) inFile(path, reason string) (Problem, bool) {
	rest, ok := strings.CutPrefix(path, "budgets[")
	if !ok || v.file == nil {
		return Problem{}, false
	}
	num, rest, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(num)
	if !ok || err != nil {
		return Problem{}, false
	}
	file, line, ok := v.file.of(i)
	if !ok {
		return Problem{}, false
	}
	return Problem{File: file, Line: line, Path: strings.TrimPrefix(rest, "."), Reason: reason}, true
}

// budgetRef names budget i in a problem about another: "budgets[i]", or
// "file:line" for a budget of the budgets file.
func (v *checker) budgetRef(i int) string {
	if file, line, ok := v.file.of(i); ok {
		return file + ":" + strconv.Itoa(line)
	}
	return "budgets[" + strconv.Itoa(i) + "]"
}

// line returns the line of path, or of its closest enclosing field.
func (v *checker) line(path string) int {
	for v.lines != nil && path != "" {
		if l, ok := v.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

func (v *checker) brokers(brokers []string) {
	if len(brokers) == 0 {
		v.add("brokers", "must list at least one broker as host:port")
	}
	for i, b := range brokers {
		v.hostPort("brokers["+strconv.Itoa(i)+"]", b, false)
	}
}

// hostPort checks a host:port; the host may be empty only when listening.
func (v *checker) hostPort(path, s string, listen bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		v.add(path, fmt.Sprintf("want host:port, got %q", s))
		return
	}
	if host == "" && !listen {
		v.add(path, fmt.Sprintf("want host:port, got %q (no host)", s))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !listen) {
		v.add(path, fmt.Sprintf("want host:port with a port from 1 to 65535, got %q", s))
	}
}

// path checks a dot-separated field path; empty means unset.
func (v *checker) path(p, s string) {
	if s == "" {
		return
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			v.add(p, fmt.Sprintf("%q has an empty segment (want dot-separated names such as a.b)", s))
			return
		}
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		v.add(p, fmt.Sprintf("%q contains white space", s))
	}
}

func (v *checker) fields(c *Config) {
	f := c.Fields
	if f.Budget == "" {
		v.add("fields.budget", "must name the event field that holds the budget name")
	}
	v.path("fields.budget", f.Budget)
	v.path("fields.key", f.Key)
	v.path("fields.id", f.ID)
	v.path("fields.score", f.Score)
	v.path("fields.time", f.Time)
	if f.Score != "" && f.ScoreExpr != "" {
		v.add("fields.score_expr", "set fields.score or fields.score_expr, not both")
	}
	if f.ScoreExpr != "" && strings.TrimSpace(f.ScoreExpr) == "" {
		v.add("fields.score_expr", "must not be blank")
	}
}

func (v *checker) rewards(c *Config) {
	r := c.Rewards
	v.path("rewards.budget", r.Budget)
	v.path("rewards.value", r.Value)
	switch {
	case len(c.Topics.Rewards) > 0 && r.Budget == "":
		v.add("rewards.budget", "must name the reward field that holds the budget name when topics.rewards is set")
	case len(c.Topics.Rewards) == 0 && (r.Budget != "" || r.Value != "" || r.MaxValue != 0):
		v.add("rewards", "is set but topics.rewards is empty")
	}
	if m := r.MaxValue; m != 0 && (!(m > 0) || m > flow.MaxTarget) {
		v.add("rewards.max_value", fmt.Sprintf("must be above 0 and at most %g, got %v", flow.MaxTarget, m))
	}
}
