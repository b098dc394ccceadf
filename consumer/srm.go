package consumer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/throttler/throttler/splitter"
	"github.com/throttler/throttler/stats"
)

// srmWarnEvery is the least time between two warnings about the same
// experiment's mismatch.
const srmWarnEvery = time.Minute

// srmCheck tests every experiment's cluster-wide variant counts (from the
// stats view) against its split, every sync interval (see
// splitter.CheckSRM for the thresholds). It tests key counts: a key is one
// unit however many events it sends, whereas event counts of traffic with
// heavy keys (a Zipf-distributed user base) vary far more than the test
// allows and would flag sound splits. Used by the tuner goroutine only.
type srmCheck struct {
	exps     []splitter.ExperimentInfo
	p        *prometheus.GaugeVec // layer, experiment
	mismatch *prometheus.GaugeVec // layer, experiment
	warned   map[string]time.Time // by layer/experiment: last warning
	obs      []uint64             // keys
	events   []uint64
	weights  []float64
}

func newSRMCheck(reg prometheus.Registerer, sp *splitter.Splitter) *srmCheck {
	exps := sp.Experiments()
	if len(exps) == 0 {
		return nil
	}
	s := &srmCheck{
		exps: exps,
		p: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "throttler_experiment_srm_p",
			Help: "p-value of the sample-ratio-mismatch chi-square test of the experiment's cluster-wide key counts per variant against its split (1 until it has enough keys)."},
			[]string{"layer", "experiment"}),
		mismatch: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "throttler_experiment_srm_mismatch",
			Help: "1 when the experiment's SRM p-value is below 0.001, else 0."},
			[]string{"layer", "experiment"}),
		warned: map[string]time.Time{},
	}
	reg.MustRegister(s.p, s.mismatch)
	return s
}

// check runs the test of every experiment; totals returns the cluster-wide
// counts of one experiment's variants.
func (s *srmCheck) check(w *Worker, now time.Time, totals func(layer, experiment string) map[string]stats.VariantCount) {
	for _, e := range s.exps {
		t := totals(e.Layer, e.Experiment)
		s.obs, s.events, s.weights = s.obs[:0], s.events[:0], s.weights[:0]
		for _, v := range e.Variants {
			s.obs = append(s.obs, t[v.Name].Keys)
			s.events = append(s.events, t[v.Name].Count)
			s.weights = append(s.weights, v.Share)
		}
		r := splitter.CheckSRM(s.obs, s.weights)
		s.p.WithLabelValues(e.Layer, e.Experiment).Set(r.P)
		flag := 0.0
		if r.Mismatch {
			flag = 1
		}
		s.mismatch.WithLabelValues(e.Layer, e.Experiment).Set(flag)
		id := e.Layer + "/" + e.Experiment
		if !r.Mismatch {
			delete(s.warned, id)
			continue
		}
		if last, ok := s.warned[id]; ok && now.Sub(last) < srmWarnEvery {
			continue
		}
		s.warned[id] = now
		keys, events := zerolog.Dict(), zerolog.Dict()
		for k, v := range e.Variants {
			keys.Uint64(v.Name, s.obs[k])
			events.Uint64(v.Name, s.events[k])
		}
		w.log.Warn().Str("layer", e.Layer).Str("experiment", e.Experiment).
			Float64("p", r.P).Float64("chi2", r.Chi2).Uint64("keys", r.N).Dict("key_counts", keys).Dict("event_counts", events).Msg("sample ratio mismatch: the variant counts do not follow the split (p < 0.001)")
	}
}

// variantTotals reads one experiment's cluster-wide counts from the view.
func (w *Worker) variantTotals(layer, experiment string) map[string]stats.VariantCount {
	t, _ := w.view.VariantTotals(layer, experiment)
	return t
}
