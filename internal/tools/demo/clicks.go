package demo

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/throttler/throttler/internal/tools/loadgen"
	"github.com/throttler/throttler/pipeline"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clicker is the reward simulator: it reads the passed events
// (read_committed) and, for a share of them chosen by a hash of the event
// id, produces a click naming the event's budget to the reward topic, a
// fixed delay after it read the pass. Clicks that would land after the
// budgets' window ends are not produced.
type clicker struct {
	cl    *kgo.Client
	enc   loadgen.Encoder // of the passed events
	share float64
	delay time.Duration
	end   time.Time

	queue []click
	sent  map[string]uint64 // clicks produced, by budget
	err   atomic.Pointer[error]
}

func (c *clicker) fail(err error) { c.err.CompareAndSwap(nil, &err) }

// Err returns the first produce error, or nil.
func (c *clicker) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

type click struct {
	due  time.Time
	rec  *kgo.Record
	name string
}

func newClicker(brokers []string, share float64, delay time.Duration, end time.Time, enc loadgen.Encoder) (*clicker, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(outputTopics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, err
	}
	return &clicker{cl: cl, enc: enc, share: share, delay: delay, end: end, sent: map[string]uint64{}}, nil
}

// clicked reports whether the event with this id gets a click: a hash of
// the id below the share, so that a run is reproducible.
func (c *clicker) clicked(id []byte) bool {
	h := fnv.New64a()
	_, _ = h.Write(id)
	return float64(h.Sum64()%1_000_000) < c.share*1_000_000
}

// run reads and clicks until every click due inside the window is
// produced (or ctx ends), then flushes and closes its client.
func (c *clicker) run(ctx context.Context) {
	defer c.cl.Close()
	for ctx.Err() == nil {
		now := time.Now()
		if now.After(c.end) && len(c.queue) == 0 {
			break
		}
		wait := 100 * time.Millisecond
		if len(c.queue) > 0 {
			wait = min(wait, max(time.Until(c.queue[0].due), time.Millisecond))
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := c.cl.PollFetches(pctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		read := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			due := read.Add(c.delay)
			ev, err := c.enc.Decode(r.Value)
			if err != nil {
				c.fail(err)
				return
			}
			id := []byte(strconv.Quote(ev.ID)) // the id's JSON text
			if due.After(c.end) || !c.clicked(id) {
				return
			}
			budget := header(r, pipeline.HeaderBudget)
			v := c.clickValue(ev, due)
			c.queue = append(c.queue, click{due: due, name: budget, rec: &kgo.Record{Topic: topicClicks, Key: r.Key, Value: v}})
		})
		c.emit(ctx, time.Now())
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.cl.Flush(fctx); err != nil {
		c.fail(err)
	}
}

// clickValue is the click of a passed event: a JSON object of its
// campaign, id and user, or in Avro or Protobuf the event's own schema
// (score 0, the click's time).
func (c *clicker) clickValue(ev loadgen.Event, at time.Time) []byte {
	if c.enc.Format() == loadgen.FormatJSON {
		v, _ := json.Marshal(struct {
			Campaign string `json:"campaign"`
			ID       string `json:"id"`
			User     string `json:"user"`
		}{ev.Campaign, ev.ID, ev.User})
		return v
	}
	click := loadgen.Event{ID: ev.ID, User: ev.User, Campaign: ev.Campaign, Time: at}
	return c.enc.Append(nil, &click)
}

// emit produces the clicks that are due, in order.
func (c *clicker) emit(ctx context.Context, now time.Time) {
	n := 0
	for n < len(c.queue) && !c.queue[n].due.After(now) {
		k := c.queue[n]
		c.sent[k.name]++
		k.rec.Timestamp = now
		c.cl.Produce(ctx, k.rec, func(_ *kgo.Record, err error) {
			if err != nil && ctx.Err() == nil {
				c.fail(err)
			}
		})
		n++
	}
	c.queue = append(c.queue[:0], c.queue[n:]...)
}

// header returns the value of the record's header key, or "".
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
