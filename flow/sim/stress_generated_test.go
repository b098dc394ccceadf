package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// mixedScenario draws a scenario like mixed-rates.yaml: six nodes of 80 to
// 1,200 events/s (one of each end), each jittering by 30% every second,
// starting 1 to 10 s apart, one of them joining at 90 s and another
// leaving at 70 s, an exchange 300 ms late losing 2% of the reports, and
// a 160 s window whose target is 5% to 65% of the traffic.
func mixedScenario(r *rand.Rand) string {
	rates := []float64{80, 1200}
	for len(rates) < 6 {
		rates = append(rates, 80+r.Float64()*1120)
	}
	r.Shuffle(len(rates), func(i, j int) { rates[i], rates[j] = rates[j], rates[i] })
	join := 1 + r.IntN(5)
	leave := 1 + r.IntN(5)
	for leave == join {
		leave = 1 + r.IntN(5)
	}
	stagger := 1 + r.Float64()*9
	var b strings.Builder
	b.WriteString("duration: 160s\nsync_interval: 1s\nsync_delay: 300ms\nsync_loss: 0.02\nseed: 1\nnodes:\n")
	var total float64
	for i, rate := range rates {
		fmt.Fprintf(&b, "  - {name: n%d, rate: %.0f, jitter: 0.3", i, rate)
		begin := float64(i) * stagger
		switch {
		case i == join:
			b.WriteString(", start: 90s")
			total += rate * 70
		case i == leave:
			fmt.Fprintf(&b, ", start: %.1fs, stop: 70s", begin)
			total += rate * (70 - begin)
		case i > 0:
			fmt.Fprintf(&b, ", start: %.1fs", begin)
			total += rate * (160 - begin)
		default:
			total += rate * 160
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "budgets:\n  - {name: campaign, target: %.0f, begin: 0s, end: 160s}\n", total*(0.05+r.Float64()*0.6))
	return b.String()
}

// Ten scenarios drawn like mixed-rates.yaml, ten seeds each: every one
// ends within half a percent of its target, never more than a thousandth
// over it.
func TestStressGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("a hundred runs")
	}
	r := rand.New(rand.NewPCG(7, 7))
	for k := range 10 {
		yaml := mixedScenario(r)
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			var fs []figures
			for _, seed := range seedsFrom(100, 10) {
				sc := mustParse(t, yaml)
				sc.Seed = seed
				fs = append(fs, figuresOf(mustRun(t, sc), "campaign", 0))
			}
			logSummary(t, "campaign", fs)
			for i, f := range fs {
				if err := finalWithin(-0.005, 0.001)(f); err != nil {
					t.Errorf("seed %d: %v\n%s", 100+i, err, yaml)
				}
			}
		})
	}
}
