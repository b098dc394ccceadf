package scale

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// phase of a run, for the gaps between deliveries.
const (
	phaseSteady = iota // steady state, before any change
	phaseChurn         // while budgets change
	phaseAfter         // after the changes, to the end of the load
	phases
)

// tail follows the destination topics (read_committed) during a row:
// every delivered input id, and per partition the arrival of each
// delivery, for the longest gap between deliveries in each phase. A
// destination record's partition is its input record's: both are keyed
// by user and partitioned alike, with as many partitions.
type tail struct {
	r      *reader
	now    func() time.Time // the arrival clock; time.Now
	paced  map[string]int
	bounds [phases + 1]time.Time // phase i is [bounds[i], bounds[i+1])

	mu        sync.Mutex
	counts    []uint8 // deliveries by id sequence, at most 255
	delivered int     // ids delivered at least once
	first     time.Time
	passes    []int64             // passes of each paced budget
	budgets   map[string]struct{} // the budgets named by a delivered record
	last      map[int32]time.Time
	gaps      [phases]time.Duration
	badIDs    int

	stop atomic.Pointer[map[tp]int64] // read to these ends, then stop
	done chan struct{}
}

func newTail(opts []kgo.Opt, paced int, bounds [phases + 1]time.Time) (*tail, error) {
	r, err := newReader(opts, true, destinations...)
	if err != nil {
		return nil, err
	}
	t := &tail{r: r, now: time.Now, paced: map[string]int{}, bounds: bounds, passes: make([]int64, paced), budgets: map[string]struct{}{}, last: map[int32]time.Time{}, done: make(chan struct{})}
	for i := range paced {
		t.paced[pacedName(i)] = i
	}
	return t, nil
}

// run follows the topics until ctx ends or, once finish asked, the ends
// are reached.
func (t *tail) run(ctx context.Context) {
	defer close(t.done)
	for ctx.Err() == nil {
		if e := t.stop.Load(); e != nil && t.r.reached(*e) {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		t.r.poll(pctx, t.record)
		cancel()
	}
}

var idField = []byte(`"id":"`)

// record takes one delivered record in.
func (t *tail) record(rec *kgo.Record) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first.IsZero() {
		t.first = now
	}
	if last, ok := t.last[rec.Partition]; ok {
		for i := range phases {
			if !now.Before(t.bounds[i]) && now.Before(t.bounds[i+1]) && !last.Before(t.bounds[0]) {
				t.gaps[i] = max(t.gaps[i], now.Sub(last))
			}
		}
	}
	t.last[rec.Partition] = now
	for _, h := range rec.Headers {
		if h.Key != "throttler-budget" {
			continue
		}
		if _, ok := t.budgets[string(h.Value)]; !ok { // the lookup does not copy the name
			t.budgets[string(h.Value)] = struct{}{}
		}
		if i, ok := t.paced[string(h.Value)]; ok && rec.Topic == outputTopic {
			t.passes[i]++
		}
	}
	seq, ok := idSeq(rec.Value)
	if !ok {
		t.badIDs++
		return
	}
	for seq >= uint64(len(t.counts)) {
		t.counts = append(t.counts, make([]uint8, max(1024, len(t.counts)))...)
	}
	switch c := t.counts[seq]; c {
	case 0:
		t.delivered++
		t.counts[seq] = 1
	case 255:
	default:
		t.counts[seq] = c + 1
	}
}

// idSeq returns the sequence of a load generator's event id
// ("<seed>-<sequence>").
func idSeq(v []byte) (uint64, bool) {
	i := bytes.Index(v, idField)
	if i < 0 {
		return 0, false
	}
	v = v[i+len(idField):]
	j := bytes.IndexByte(v, '"')
	k := bytes.IndexByte(v, '-')
	if j < 0 || k < 0 || k > j {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(v[k+1:j]), 10, 64)
	return seq, err == nil
}

// finish reads the topics to their ends of now (at most timeout) and
// stops; it reports whether they were reached.
func (t *tail) finish(ctx context.Context, cancel context.CancelFunc, timeout time.Duration) bool {
	defer t.r.close()
	ends, err := t.r.ends(ctx, destinations...)
	if err == nil {
		t.stop.Store(&ends)
	}
	select {
	case <-t.done:
		return err == nil
	case <-time.After(timeout):
		cancel()
		<-t.done
		return false
	}
}

// activeBudgets returns the number of budgets named by the delivered
// records (their throttler-budget header: the budget that passed an
// event, or that refused it): the budgets that saw an event in the row.
func (t *tail) activeBudgets() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.budgets)
}

// deliveries returns, of the ids in input, those delivered, lost and
// delivered more than once.
func (t *tail) deliveries(input []bool) (delivered, lost, duplicated int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for seq, in := range input {
		if !in {
			continue
		}
		c := uint8(0)
		if seq < len(t.counts) {
			c = t.counts[seq]
		}
		switch {
		case c == 0:
			lost++
		case c > 1:
			duplicated++
			delivered++
		default:
			delivered++
		}
	}
	return delivered, lost, duplicated
}

// firstDelivery returns when the first record arrived; zero: none yet.
func (t *tail) firstDelivery() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first
}
