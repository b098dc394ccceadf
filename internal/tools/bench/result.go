package bench

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// The sides of a round, as Round.Side names them.
const (
	sidePassthrough = "passthrough"
	sideDecode      = "decode"
	sidePipeline    = "pipeline"
	sideOneBudget   = "one-budget"
	sideStreams     = "streams"
)

// Round is one measured round of one side.
type Round struct {
	// Side is "passthrough", "decode", "pipeline", "one-budget" or
	// "streams".
	Side    string  `json:"side"`
	RPS     float64 `json:"rps"`
	Seconds float64 `json:"seconds"`
	// CPUMicros is the CPU time per record of the side's process, from
	// the start of the side to its end, in µs: the bench's own process
	// for the Go sides (the embedded broker included when there is one),
	// the JVM for the Streams reference.
	CPUMicros float64 `json:"cpu_us_per_record"`
	// CPUPerMillion is the CPU time of the side's process in the window
	// its rate is measured over (from the group's first commit to its
	// last), in seconds per million records committed in that window.
	// It leaves out start-up (a JVM's too) as RPS does.
	CPUPerMillion float64 `json:"cpu_s_per_million"`
	// Passed is the fraction of records the pipeline passed (pipeline
	// rounds only).
	Passed float64 `json:"passed,omitempty"`
	// DeadLetters counts the records the pipeline dead-lettered (none
	// expected: every record is good).
	DeadLetters float64 `json:"dead_letters,omitempty"`
	// Produced is the fraction of records the pipeline produced to a
	// topic (passed, rejected when the rejected topic is on, dead
	// letters); pipeline rounds only.
	Produced float64 `json:"produced,omitempty"`
}

// Result is what Run measured: medians of each side's rounds, and
// quotients of medians. Fields of a side that did not run are zero and
// left out of the JSON.
type Result struct {
	Records        int     `json:"records"`
	Delivery       string  `json:"delivery"`
	Format         string  `json:"format"`
	PipelineRPS    float64 `json:"pipeline_rps"`
	PassthroughRPS float64 `json:"passthrough_rps"`
	// Ratio is PipelineRPS / PassthroughRPS.
	Ratio  float64 `json:"ratio"`
	Rounds []Round `json:"rounds,omitempty"`
	// RejectedTopic says whether the pipeline produced its rejected
	// events (Config.DropRejected false); Budgets and Skew are Config's.
	RejectedTopic bool    `json:"rejected_topic"`
	Budgets       int     `json:"budgets"`
	Skew          float64 `json:"budget_skew"`
	// SyncInterval is the pipeline's (Config.SyncInterval), as a Go
	// duration.
	SyncInterval string `json:"sync_interval"`
	// Broker is "embedded" (kfake in the bench's process, whose CPU then
	// counts in every Go side's CPU) or "external" (Config.Brokers:
	// the CPU figures are the worker side's alone); BrokerInProcess says
	// the same as a flag.
	Broker          string `json:"broker"`
	BrokerInProcess bool   `json:"broker_in_process"`
	// The medians of the sides' Round.CPUPerMillion.
	PassthroughCPU float64 `json:"passthrough_cpu_s_per_million"`
	PipelineCPU    float64 `json:"pipeline_cpu_s_per_million"`
	// DecodeRPS is the median of the decode reference's rounds, and
	// DecodeRatio its quotient by PassthroughRPS; PipelineDecodeRatio is
	// PipelineRPS / DecodeRPS (Config.DecodeReference).
	DecodeRPS           float64 `json:"decode_rps,omitempty"`
	DecodeRatio         float64 `json:"decode_ratio,omitempty"`
	DecodeCPU           float64 `json:"decode_cpu_s_per_million,omitempty"`
	PipelineDecodeRatio float64 `json:"pipeline_decode_ratio,omitempty"`
	// OneBudgetRPS is the median of the one-budget pipeline's rounds and
	// BudgetsRatio is PipelineRPS / OneBudgetRPS
	// (Config.OneBudgetReference).
	OneBudgetRPS float64 `json:"one_budget_rps,omitempty"`
	OneBudgetCPU float64 `json:"one_budget_cpu_s_per_million,omitempty"`
	BudgetsRatio float64 `json:"budgets_ratio,omitempty"`
	// StreamsRPS and StreamsCPU are the Kafka Streams reference's medians
	// (its JVM's CPU); StreamsRatio is PipelineRPS / StreamsRPS and
	// StreamsCPURatio PipelineCPU / StreamsCPU. StreamsGuarantee is its
	// processing.guarantee, StreamsThreads its num.stream.threads.
	// StreamsWarmup is the number of its unmeasured passes before the
	// rounds. StreamsSkipped says why the side did not run although asked
	// for (no Java, no Maven).
	StreamsRPS       float64 `json:"streams_rps,omitempty"`
	StreamsCPU       float64 `json:"streams_cpu_s_per_million,omitempty"`
	StreamsRatio     float64 `json:"streams_ratio,omitempty"`
	StreamsCPURatio  float64 `json:"streams_cpu_ratio,omitempty"`
	StreamsGuarantee string  `json:"streams_guarantee,omitempty"`
	StreamsThreads   int     `json:"streams_threads,omitempty"`
	StreamsWarmup    int     `json:"streams_warmup,omitempty"`
	StreamsSkipped   string  `json:"streams_skipped,omitempty"`
	// LoadAverage is the machine's one-minute load average at the start
	// and at the end of the run (Linux; else absent): other work on the
	// machine moves every figure.
	LoadAverage []float64 `json:"load_average,omitempty"`
}

// summarize fills in the medians and quotients from res.Rounds.
func (res *Result) summarize() {
	rps := map[string][]float64{}
	cpu := map[string][]float64{}
	for _, r := range res.Rounds {
		rps[r.Side] = append(rps[r.Side], r.RPS)
		cpu[r.Side] = append(cpu[r.Side], r.CPUPerMillion)
	}
	res.PipelineRPS, res.PipelineCPU = median(rps[sidePipeline]), median(cpu[sidePipeline])
	res.PassthroughRPS, res.PassthroughCPU = median(rps[sidePassthrough]), median(cpu[sidePassthrough])
	res.DecodeRPS, res.DecodeCPU = median(rps[sideDecode]), median(cpu[sideDecode])
	res.OneBudgetRPS, res.OneBudgetCPU = median(rps[sideOneBudget]), median(cpu[sideOneBudget])
	res.StreamsRPS, res.StreamsCPU = median(rps[sideStreams]), median(cpu[sideStreams])
	res.Ratio = quotient(res.PipelineRPS, res.PassthroughRPS)
	res.DecodeRatio = quotient(res.DecodeRPS, res.PassthroughRPS)
	res.PipelineDecodeRatio = quotient(res.PipelineRPS, res.DecodeRPS)
	res.BudgetsRatio = quotient(res.PipelineRPS, res.OneBudgetRPS)
	res.StreamsRatio = quotient(res.PipelineRPS, res.StreamsRPS)
	res.StreamsCPURatio = quotient(res.PipelineCPU, res.StreamsCPU)
}

// quotient returns a/b, or 0 when either is 0 (a side that did not run).
func quotient(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// loadAverage returns the one-minute load average from /proc/loadavg, and
// false where there is none.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
