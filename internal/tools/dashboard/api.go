package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/throttler/throttler/internal/httpguard"
	"github.com/throttler/throttler/internal/tools/clusterstatus"
)

// streamWriteTimeout bounds each write of an event stream.
const streamWriteTimeout = 30 * time.Second

// APIVersion is the version of the JSON API, the v1 of its paths. Within a
// version fields are only added; a change of meaning or a removal is a new
// version under new paths.
const APIVersion = 1

// List limits of GET /api/v1/budgets.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	trendPoints  = 24
)

// BudgetList is the answer of GET /api/v1/budgets.
type BudgetList struct {
	At      time.Time `json:"at"`
	Seq     uint64    `json:"seq"`
	Total   int       `json:"total"`   // budgets that match the filters
	All     int       `json:"all"`     // budgets in all
	Offset  int       `json:"offset"`  // of the first budget listed, in the matches
	Limit   int       `json:"limit"`   // as asked, or the default
	Sort    string    `json:"sort"`    // "tree", "name" or "deviation"
	Budgets []Budget  `json:"budgets"` // the page, in order
}

// BudgetDetail is the answer of GET /api/v1/budgets/{name}.
type BudgetDetail struct {
	At       time.Time `json:"at"`
	Seq      uint64    `json:"seq"`
	Budget   Budget    `json:"budget"`
	Children []Budget  `json:"children"` // by name
	// Curve is the sampled course since the window or period began
	// (older spans thinned, see docs/dashboard.md); Ideal the ideal
	// course over the whole window or period: its corners.
	Curve []CurvePoint `json:"curve"`
	Ideal []IdealPoint `json:"ideal"`
}

// CurvePoint is one sample of a budget.
type CurvePoint struct {
	T         time.Time `json:"t"`
	Achieved  float64   `json:"achieved"` // passes, or rewards for a reward budget
	Passes    float64   `json:"passes"`
	Ideal     float64   `json:"ideal"`
	Deviation float64   `json:"deviation"` // (achieved-ideal)/target
}

// IdealPoint is a corner of the ideal course.
type IdealPoint struct {
	T     time.Time `json:"t"`
	Ideal float64   `json:"ideal"`
}

// ExperimentList is the answer of GET /api/v1/experiments.
type ExperimentList struct {
	At          time.Time                  `json:"at"`
	Seq         uint64                     `json:"seq"`
	Mismatches  int                        `json:"srm_mismatches"`
	Experiments []clusterstatus.Experiment `json:"experiments"` // mismatched first, then by layer and name
}

// WorkerList is the answer of GET /api/v1/workers.
type WorkerList struct {
	At         time.Time   `json:"at"`
	Seq        uint64      `json:"seq"`
	Workers    []Worker    `json:"workers"`    // by id
	Partitions []Partition `json:"partitions"` // by topic, then partition
}

// Handler returns the dashboard's HTTP handler: the page and the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/summary", s.getSummary)
	mux.HandleFunc("GET /api/v1/budgets", s.listBudgets)
	mux.HandleFunc("GET /api/v1/budgets/{name}", s.getBudget)
	mux.HandleFunc("GET /api/v1/budgets/{name}/chart.svg", s.getChart)
	mux.HandleFunc("GET /api/v1/experiments", s.listExperiments)
	mux.HandleFunc("GET /api/v1/workers", s.listWorkers)
	mux.HandleFunc("GET /api/v1/events", s.events)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "no such API path: %s (see docs/dashboard.md)", r.URL.Path)
	})
	pages(mux)
	return mux
}

// writeJSON answers v as JSON; when v does not encode (a figure that is
// not finite slipped through), it answers 500 with the error, never a 200
// without a body.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "encoding the answer: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

func apiError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}

func (s *Server) getSummary(w http.ResponseWriter, _ *http.Request) {
	snap := s.snap.Load()
	sm := snap.summary
	sm.CurvePoints = snap.points
	sm.SampleEverySeconds = s.cfg.sampleEvery.Seconds()
	writeJSON(w, sm)
}

// listQuery is a parsed GET /api/v1/budgets.
type listQuery struct {
	q, sort, parent string
	states          map[string]bool
	offset, limit   int
}

func parseList(r *http.Request) (listQuery, error) {
	v := r.URL.Query()
	lq := listQuery{q: strings.ToLower(strings.TrimSpace(v.Get("q"))), sort: v.Get("sort"), parent: v.Get("parent"), limit: DefaultLimit}
	switch lq.sort {
	case "":
		lq.sort = "tree"
	case "tree", "name", "deviation":
	default:
		return lq, fmt.Errorf("sort %q: want tree, name or deviation", lq.sort)
	}
	for _, st := range strings.Split(v.Get("state"), ",") {
		switch st = strings.TrimSpace(st); st {
		case "":
		case "off":
			lq.states = setOf(lq.states, StateBehind, StateAhead)
		case StateBehind, StateAhead, StateStale, StateNoReports, StateWaiting, StateOnCourse:
			lq.states = setOf(lq.states, st)
		default:
			return lq, fmt.Errorf("state %q: want off, behind, ahead, stale, no reports, waiting or on course", st)
		}
	}
	for name, dst := range map[string]*int{"offset": &lq.offset, "limit": &lq.limit} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return lq, fmt.Errorf("%s %q: want a whole number from 0", name, s)
			}
			*dst = n
		}
	}
	lq.limit = min(lq.limit, MaxLimit)
	return lq, nil
}

func setOf(m map[string]bool, keys ...string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) {
	lq, err := parseList(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "%v", err)
		return
	}
	snap := s.snap.Load()
	out := BudgetList{At: snap.st.At, Seq: snap.seq, All: len(snap.budgets), Offset: lq.offset, Limit: lq.limit, Sort: lq.sort, Budgets: []Budget{}}
	order := func(k int) int32 { return int32(k) }
	switch lq.sort {
	case "tree":
		order = func(k int) int32 { return snap.tree[k] }
	case "deviation":
		order = func(k int) int32 { return snap.byDev[k] }
	}
	for k := range snap.budgets {
		i := order(k)
		b := &snap.budgets[i]
		if (lq.q != "" && !strings.Contains(snap.lower[i], lq.q)) || (lq.states != nil && !lq.states[b.State]) ||
			(lq.parent != "" && b.Parent != lq.parent) {
			continue
		}
		if out.Total >= lq.offset && len(out.Budgets) < lq.limit {
			out.Budgets = append(out.Budgets, *b)
		}
		out.Total++
	}
	s.trends(out.Budgets)
	writeJSON(w, out)
}

// trends sets the Trend of budgets from their curves.
func (s *Server) trends(bs []Budget) {
	var buf []point
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range bs {
		b := &bs[i]
		buf = s.hist.spread(b.Name, trendPoints, buf[:0])
		b.Trend = make([]float64, 0, len(buf))
		for _, p := range buf {
			b.Trend = append(b.Trend, deviation(&b.Budget, float64(p.a), s.hist.at(p.t)))
		}
	}
}

func deviation(b *clusterstatus.Budget, achieved float64, t time.Time) float64 {
	if b.Target <= 0 {
		return 0
	}
	return clusterstatus.Finite((achieved - b.IdealAt(t)) / b.Target)
}

// detail returns a budget's detail, pinning its curve.
func (s *Server) detail(name string) (BudgetDetail, bool) {
	snap := s.snap.Load()
	i, ok := snap.index[name]
	if !ok {
		return BudgetDetail{}, false
	}
	b := snap.budgets[i]
	d := BudgetDetail{At: snap.st.At, Seq: snap.seq, Budget: b, Children: []Budget{}, Curve: []CurvePoint{}}
	for _, c := range snap.children[name] {
		d.Children = append(d.Children, snap.budgets[c])
	}
	s.trends(d.Children)
	s.mu.Lock()
	s.hist.pin(name, snap.st.At)
	pts := s.hist.points(name)
	s.mu.Unlock()
	for _, p := range pts {
		t := s.hist.at(p.t)
		d.Curve = append(d.Curve, CurvePoint{T: t, Achieved: float64(p.a), Passes: float64(p.p), Ideal: clusterstatus.Finite(b.IdealAt(t)), Deviation: deviation(&b.Budget, float64(p.a), t)})
	}
	for _, t := range []time.Time{b.Start, b.Due(), b.Finish} {
		if n := len(d.Ideal); n == 0 || t.After(d.Ideal[n-1].T) {
			d.Ideal = append(d.Ideal, IdealPoint{T: t, Ideal: clusterstatus.Finite(b.IdealAt(t))})
		}
	}
	return d, true
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) {
	d, ok := s.detail(r.PathValue("name"))
	if !ok {
		apiError(w, http.StatusNotFound, "no budget %q", r.PathValue("name"))
		return
	}
	writeJSON(w, d)
}

func (s *Server) getChart(w http.ResponseWriter, r *http.Request) {
	d, ok := s.detail(r.PathValue("name"))
	if !ok {
		apiError(w, http.StatusNotFound, "no budget %q", r.PathValue("name"))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	_ = writeChart(r.Context(), w, &d)
}

func (s *Server) listExperiments(w http.ResponseWriter, _ *http.Request) {
	snap := s.snap.Load()
	out := ExperimentList{At: snap.st.At, Seq: snap.seq, Mismatches: snap.st.Mismatches, Experiments: make([]clusterstatus.Experiment, 0, len(snap.st.Experiments))}
	for _, mismatched := range []bool{true, false} {
		for _, x := range snap.st.Experiments {
			if x.SRM.Mismatch == mismatched {
				out.Experiments = append(out.Experiments, x)
			}
		}
	}
	writeJSON(w, out)
}

func (s *Server) listWorkers(w http.ResponseWriter, _ *http.Request) {
	snap := s.snap.Load()
	out := WorkerList{At: snap.st.At, Seq: snap.seq, Workers: snap.workers, Partitions: snap.partitions}
	if out.Workers == nil {
		out.Workers = []Worker{}
	}
	if out.Partitions == nil {
		out.Partitions = []Partition{}
	}
	writeJSON(w, out)
}

// events streams one server-sent event per sample ("sample", data
// {"seq":N,"at":T}), the newest at once on connecting, and a comment every
// 15 s so that proxies keep the stream open.
//
// At most MaxStreams streams are open at once (an event stream holds a
// connection for as long as its page is open): one more is refused with
// 503. A stream lifts the server's write timeout for itself
// (httpguard.StreamDeadline), giving each write streamWriteTimeout: a
// client that stops reading is cut then.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		apiError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	if n := s.streams.Add(1); n > int64(s.cfg.maxStreams) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		apiError(w, http.StatusServiceUnavailable, "too many event streams open (at most %d)", s.cfg.maxStreams)
		return
	}
	defer s.streams.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	httpguard.StreamDeadline(w, streamWriteTimeout)
	fmt.Fprint(w, "retry: 2000\n\n")
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	var sent uint64
	for next := s.next(); ; {
		httpguard.StreamDeadline(w, streamWriteTimeout)
		if snap := s.snap.Load(); snap.seq != sent {
			sent = snap.seq
			fmt.Fprintf(w, "event: sample\ndata: {\"seq\":%d,\"at\":%q}\n\n", snap.seq, snap.st.At.Format(time.RFC3339Nano))
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		case <-next:
			next = s.next()
		case <-ping.C:
			httpguard.StreamDeadline(w, streamWriteTimeout)
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		}
	}
}
