package bench

import (
	"context"
	"fmt"
	"io"
)

// side is one side of a round: its name (Round.Side) and how round i of it
// runs.
type side struct {
	name string
	run  func(ctx context.Context, i int) (Round, error)
}

// firstExpect is a pipeline's expected rate before any side of the run
// measured one (records/s): it only sets how much its budgets pass.
const firstExpect = 500_000

// rounds runs c.Rounds rounds of every side, appending them to
// res.Rounds. Round i starts at side i (modulo their number), so that
// over the rounds every side runs after every other: what one side leaves
// behind (a broker deleting the topics of the last, a JVM compiling)
// weighs on all of them alike.
func (r *runner) rounds(ctx context.Context, res *Result) error {
	c := r.c
	sides, err := r.sides()
	if err != nil {
		return err
	}
	if r.streams != nil {
		// The JVM compiles its hot code and sizes its heap while it runs:
		// passes over the input, not measured, so that the rounds measure
		// Streams as a long-running service runs.
		for k := range c.StreamsWarmup {
			if _, err := r.round(ctx, k, "streams warm-up", func(ctx context.Context) (Round, error) {
				return r.streamsRound(ctx, -1-k)
			}); err != nil {
				return err
			}
		}
	}
	for i := range c.Rounds {
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			rd, err := r.round(ctx, i, s.name, func(ctx context.Context) (Round, error) { return s.run(ctx, i) })
			if err != nil {
				return err
			}
			res.Rounds = append(res.Rounds, rd)
		}
	}
	return nil
}

// sides returns the sides of c in their order in round 0.
func (r *runner) sides() ([]side, error) {
	c := r.c
	// last returns w in the last round, nil before.
	last := func(i int, w io.Writer) io.Writer {
		if i == c.Rounds-1 {
			return w
		}
		return nil
	}
	// A pipeline's budgets pass half of its expected rate: its previous
	// round's, or 0.8 of the passthrough's latest.
	prev := map[string]float64{}
	expect := func(name string) float64 {
		if v := prev[name]; v > 0 {
			return v
		}
		if v := prev[sidePassthrough]; v > 0 {
			return 0.8 * v
		}
		return firstExpect
	}
	keep := func(name string, rd Round, err error) (Round, error) {
		if err == nil {
			prev[name] = rd.RPS
		}
		return rd, err
	}
	sides := []side{{sidePassthrough, func(ctx context.Context, i int) (Round, error) {
		rd, err := r.passthroughRound(ctx, i, last(i, c.PassthroughProfile), nil)
		return keep(sidePassthrough, rd, err)
	}}}
	if c.DecodeReference {
		// The decode reference decodes with the pipeline's decoder.
		ref, err := newDecoder(r.decOpts...)
		if err != nil {
			return nil, err
		}
		sides = append(sides, side{sideDecode, func(ctx context.Context, i int) (Round, error) {
			return r.passthroughRound(ctx, i, nil, ref)
		}})
	}
	sides = append(sides, side{sidePipeline, func(ctx context.Context, i int) (Round, error) {
		rd, err := r.pipelineRound(ctx, i, sidePipeline, c, expect(sidePipeline), last(i, c.CPUProfile))
		return keep(sidePipeline, rd, err)
	}})
	if c.OneBudgetReference {
		one := c
		one.Budgets = 1
		sides = append(sides, side{sideOneBudget, func(ctx context.Context, i int) (Round, error) {
			rd, err := r.pipelineRound(ctx, i, sideOneBudget, one, expect(sideOneBudget), nil)
			return keep(sideOneBudget, rd, err)
		}})
	}
	if r.streams != nil {
		sides = append(sides, side{sideStreams, r.streamsRound})
	}
	return sides, nil
}

// round runs round i of a side under roundTimeout and logs it.
func (r *runner) round(ctx context.Context, i int, name string, run func(context.Context) (Round, error)) (Round, error) {
	rctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	rd, err := run(rctx)
	if err != nil {
		return rd, fmt.Errorf("%s round %d: %w", name, i+1, err)
	}
	ev := r.c.Log.Info().Int("round", i+1).Float64("rps", rd.RPS).Float64("cpu_s_per_million", rd.CPUPerMillion)
	if rd.Side == sidePipeline || rd.Side == sideOneBudget {
		ev = ev.Float64("passed", rd.Passed)
	}
	ev.Msg(name)
	return rd, nil
}
