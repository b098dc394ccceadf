package dashboard

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/throttler/throttler/internal/tools/clusterstatus"
	"github.com/throttler/throttler/stats"
)

// Budget states, from the most to the least urgent.
const (
	StateBehind    = "behind"     // achieved below the ideal course by more than Band
	StateAhead     = "ahead"      // above it by more than Band
	StateStale     = "stale"      // its oldest source's report is older than StaleAfter
	StateNoReports = "no reports" // no source reported it
	StateWaiting   = "waiting"    // its window has not begun
	StateOnCourse  = "on course"  // within Band of the ideal course
)

// Budget is one budget in the API: its status (the fields of `throttler
// status --json`, but Ideal and Deviation taken at CountsAt, the instant
// the counts stand for) and what the dashboard adds.
type Budget struct {
	clusterstatus.Budget
	// State is one of the State constants.
	State string `json:"state"`
	// Depth is the budget's nesting depth (0: no parent); Children the
	// number of its children.
	Depth    int `json:"depth"`
	Children int `json:"children"`
	// Trend is the deviation ((achieved-ideal)/target) at up to 24
	// instants spread over the curve, oldest first; in lists only.
	Trend []float64 `json:"trend,omitempty"`
}

// OffCourse reports whether the budget is outside the band.
func (b *Budget) OffCourse() bool { return b.State == StateBehind || b.State == StateAhead }

// Worker is one worker's status.
type Worker struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"` // when it last published its status
	AgeSeconds float64   `json:"age_seconds"`
	// Silent is true when the status is older than max(5 sync intervals,
	// 10 s): the worker stopped or is stuck.
	Silent              bool      `json:"silent"`
	Started             time.Time `json:"started"`
	SyncIntervalSeconds float64   `json:"sync_interval_seconds"`
	Commits             uint64    `json:"commits"`
	Aborted             uint64    `json:"aborted"`
	DeadLetters         uint64    `json:"dead_letters"`
	Partitions          int       `json:"partitions"` // owned sources, Omitted included
	Omitted             int       `json:"omitted"`    // owned sources its status left out
	Lag                 int64     `json:"lag"`        // sum of its partitions' known lags
	Parked              int       `json:"parked"`     // owned sources it parked
}

// GoneAfter is the age past which a worker's status is taken for the
// leftover of a stopped worker (the compacted topic keeps its last record;
// a restarted worker has a new id) and no longer listed: its group has
// long given its partitions to others.
const GoneAfter = 10 * time.Minute

// Partition is one source (input or reward partition) and its owner.
type Partition struct {
	Source    string `json:"source"` // topic/partition
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Owner     string `json:"owner"`
	// OwnerSilent: the owner's status is old (see Worker.Silent).
	OwnerSilent bool `json:"owner_silent"`
	// Lag is the records between the last processed and the high
	// watermark as of the owner's last fetch; -1 unknown.
	Lag    int64 `json:"lag"`
	Offset int64 `json:"offset"` // the next offset as last committed by the owner; -1 none yet
	// LastCommitAge is the age in seconds of the owner's last commit of
	// the partition; null before the first.
	LastCommitAge *float64 `json:"last_commit_age_seconds"`
	// Claims counts the workers whose status lists the source; above 1
	// the newest status is shown (a rebalance, or a silent worker's
	// leftover).
	Claims int `json:"claims"`
	// Parked is why the owner parked the partition (its ledger cannot be
	// restored whole: docs/operations.md, Parked partitions); "" when it
	// runs.
	Parked string `json:"parked,omitempty"`
}

// Summary is the page's header: what is off course, out of balance or
// silent, in numbers.
type Summary struct {
	Version            int       `json:"version"`
	StatsTopic         string    `json:"stats_topic"`
	At                 time.Time `json:"at"`
	Seq                uint64    `json:"seq"` // the sample's number: grows by one per sample
	SampleEverySeconds float64   `json:"sample_every_seconds"`
	Band               float64   `json:"band"`
	Budgets            struct {
		Total     int `json:"total"`
		OffCourse int `json:"off_course"` // behind + ahead
		Behind    int `json:"behind"`
		Ahead     int `json:"ahead"`
		Stale     int `json:"stale"`
		NoReports int `json:"no_reports"`
		Waiting   int `json:"waiting"`
	} `json:"budgets"`
	Experiments struct {
		Total      int `json:"total"`
		Mismatches int `json:"srm_mismatches"`
	} `json:"experiments"`
	Workers struct {
		Total       int    `json:"total"` // listed: Gone not included
		Gone        int    `json:"gone"`  // statuses older than GoneAfter, not listed
		Silent      int    `json:"silent"`
		Partitions  int    `json:"partitions"`
		Lag         int64  `json:"lag"`
		Aborted     uint64 `json:"aborted"`
		DeadLetters uint64 `json:"dead_letters"`
		Parked      int    `json:"parked"` // partitions parked by their owners
	} `json:"workers"`
	// CurvePoints is the number of points the curves hold.
	CurvePoints int `json:"curve_points"`
}

// snapshot is one sample, immutable once stored.
type snapshot struct {
	seq         uint64
	st          clusterstatus.Status // its Budgets moved to budgets
	budgets     []Budget             // by name
	lower       []string             // budgets' names in lower case, for search
	index       map[string]int32
	byDev       []int32 // by |deviation|, largest first, then by name
	tree        []int32 // parents before their children, siblings by name
	children    map[string][]int32
	workers     []Worker
	partitions  []Partition
	summary     Summary
	points      int
	sampleEvery time.Duration
}

func buildSnapshot(st clusterstatus.Status, workers []stats.WorkerStatus, staleAfter time.Duration, seq uint64) *snapshot {
	s := &snapshot{seq: seq, st: st, budgets: make([]Budget, len(st.Budgets)), lower: make([]string, len(st.Budgets)),
		index: make(map[string]int32, len(st.Budgets)), children: map[string][]int32{}}
	sm := &s.summary
	sm.Version, sm.StatsTopic, sm.At, sm.Seq, sm.Band = APIVersion, st.StatsTopic, st.At, seq, Band
	for i, b := range st.Budgets {
		asOfCounts(&b, st.At)
		s.budgets[i] = Budget{Budget: b, State: stateOf(&b, st.At, staleAfter)}
		s.lower[i] = strings.ToLower(b.Name)
		s.index[b.Name] = int32(i)
		if b.Parent != "" {
			s.children[b.Parent] = append(s.children[b.Parent], int32(i))
		}
		switch s.budgets[i].State {
		case StateBehind:
			sm.Budgets.Behind++
		case StateAhead:
			sm.Budgets.Ahead++
		case StateStale:
			sm.Budgets.Stale++
		case StateNoReports:
			sm.Budgets.NoReports++
		case StateWaiting:
			sm.Budgets.Waiting++
		}
	}
	s.st.Budgets = nil
	sm.Budgets.Total = len(s.budgets)
	sm.Budgets.OffCourse = sm.Budgets.Behind + sm.Budgets.Ahead
	sm.Experiments.Total, sm.Experiments.Mismatches = len(st.Experiments), st.Mismatches
	s.orders()
	s.workerRows(workers, st.At)
	return s
}

// asOfCounts sets the budget's Ideal and Deviation at the instant its
// counts stand for (CountsAt, when before now) rather than at now: the
// reports are up to a sync interval old, which in a short window is a
// percent of the target.
func asOfCounts(b *clusterstatus.Budget, now time.Time) {
	if b.CountsAt == nil || !b.CountsAt.Before(now) {
		return
	}
	b.Ideal = b.IdealAt(*b.CountsAt)
	if b.Target > 0 {
		b.Deviation = (b.Achieved - b.Ideal) / b.Target
	}
}

// stateOf classifies a budget at now.
func stateOf(b *clusterstatus.Budget, now time.Time, staleAfter time.Duration) string {
	switch {
	case now.Before(b.Start):
		return StateWaiting
	case b.Sources == 0:
		return StateNoReports
	case b.OldestReportAge > staleAfter.Seconds():
		return StateStale
	case b.Deviation < -Band:
		return StateBehind
	case b.Deviation > Band:
		return StateAhead
	}
	return StateOnCourse
}

// orders sorts the budgets by deviation and as a tree.
func (s *snapshot) orders() {
	n := len(s.budgets)
	s.byDev = make([]int32, n)
	for i := range s.byDev {
		s.byDev[i] = int32(i)
	}
	slices.SortStableFunc(s.byDev, func(a, b int32) int {
		return cmp.Compare(math.Abs(s.budgets[b].Deviation), math.Abs(s.budgets[a].Deviation))
	})
	s.tree = make([]int32, 0, n)
	seen := make([]bool, n)
	var visit func(i int32, depth int)
	visit = func(i int32, depth int) {
		if seen[i] {
			return // a cycle: cannot happen in a validated tree
		}
		seen[i] = true
		b := &s.budgets[i]
		b.Depth = depth
		b.Children = len(s.children[b.Name])
		s.tree = append(s.tree, i)
		for _, c := range s.children[b.Name] {
			visit(c, depth+1)
		}
	}
	for i := range s.budgets {
		p := s.budgets[i].Parent
		if _, ok := s.index[p]; p == "" || !ok { // a root, or an orphan whose parent has no definition
			visit(int32(i), 0)
		}
	}
	for i := range seen { // budgets in a cycle, were there one
		visit(int32(i), 0)
	}
}

// workerRows fills the workers and partitions.
func (s *snapshot) workerRows(ws []stats.WorkerStatus, now time.Time) {
	sm := &s.summary
	byName := map[string]int{}
	for _, w := range ws {
		age := now.Sub(w.At).Seconds()
		if age > GoneAfter.Seconds() {
			sm.Workers.Gone++ // a stopped worker's last record, kept by compaction
			continue
		}
		row := Worker{ID: w.Worker, At: w.At, AgeSeconds: age, Started: w.Started, SyncIntervalSeconds: w.SyncInterval.Seconds(),
			Commits: w.Commits, Aborted: w.Aborted, DeadLetters: w.DeadLetters, Partitions: len(w.Sources) + w.Omitted, Omitted: w.Omitted}
		row.Silent = age > max(5*w.SyncInterval, 10*time.Second).Seconds()
		parked := make(map[string]string, len(w.Parked))
		for _, p := range w.Parked {
			parked[p.Source] = p.Reason
		}
		row.Parked = len(w.Parked)
		for _, src := range w.Sources {
			if src.Lag > 0 {
				row.Lag += src.Lag
			}
			p := Partition{Source: src.Source, Owner: w.Worker, OwnerSilent: row.Silent, Lag: src.Lag, Offset: src.Offset, Claims: 1, Parked: parked[src.Source]}
			p.Topic, p.Partition, _ = stats.ParseSource(src.Source)
			if !src.Committed.IsZero() {
				a := now.Sub(src.Committed).Seconds()
				p.LastCommitAge = &a
			}
			i, seen := byName[src.Source]
			switch {
			case !seen:
				byName[src.Source] = len(s.partitions)
				s.partitions = append(s.partitions, p)
			case w.At.After(s.workerAt(s.partitions[i].Owner, ws)):
				p.Claims = s.partitions[i].Claims + 1
				s.partitions[i] = p
			default:
				s.partitions[i].Claims++
			}
		}
		s.workers = append(s.workers, row)
		sm.Workers.Total++
		sm.Workers.Aborted += w.Aborted
		sm.Workers.DeadLetters += w.DeadLetters
		if row.Silent {
			sm.Workers.Silent++
		}
	}
	slices.SortFunc(s.partitions, func(a, b Partition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), strings.Compare(a.Source, b.Source))
	})
	for _, p := range s.partitions {
		if !p.OwnerSilent && p.Lag > 0 {
			sm.Workers.Lag += p.Lag
		}
		if p.Parked != "" {
			sm.Workers.Parked++
		}
	}
	sm.Workers.Partitions = len(s.partitions)
}

// workerAt returns the publication time of a worker's status.
func (s *snapshot) workerAt(id string, ws []stats.WorkerStatus) time.Time {
	for _, w := range ws {
		if w.Worker == id {
			return w.At
		}
	}
	return time.Time{}
}
