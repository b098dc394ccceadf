package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partition is what a stage knows of the partition it is built for
// (Stage.New): its names, the way to its lanes, and the way to keep state
// in the partition's transactions. The worker creates one per assigned
// partition; stages read it from the partition's goroutine only.
type Partition struct {
	Topic  string
	ID     int32
	Source string // "topic/partition"
	// Partitions is the partition count of Topic, 0 when unknown.
	Partitions int

	ctx     context.Context
	events  LaneFunc
	any     LaneFunc
	version uint64
	kept    []State
}

// LaneFunc returns the partition's decider of a budget, opening it at now
// when the partition has none open, or nil when there is no such budget.
// The worker's answer is a flow lane (flow.Source.Get): finding an open one
// costs a map lookup and allocates nothing.
type LaneFunc func(budget string, now time.Time) Decider

// NewPartition returns partition id of topic, which has partitions
// partitions (0 when unknown), with no lanes (SetLanes) and a context that
// never ends (SetContext). The worker makes one per assigned partition;
// tests and tools make their own.
func NewPartition(topic string, id int32, partitions int) *Partition {
	return &Partition{Topic: topic, ID: id, Source: fmt.Sprintf("%s/%d", topic, id), Partitions: partitions, ctx: context.Background()}
}

// SetContext sets the context of the partition's assignment, which ends
// when the partition is revoked or the worker stops; stages that load
// state in New watch it.
func (p *Partition) SetContext(ctx context.Context) { p.ctx = ctx }

// Context returns the context of the partition's assignment.
func (p *Partition) Context() context.Context { return p.ctx }

// SetLanes sets how the partition finds its deciders by budget name:
// events for the budgets events may name (the decide stage), any for every
// budget of the worker, those of variant limits included (LaneOf). Either
// may be nil: no decider. It is the worker's, called on the partition's
// goroutine between events; it changes Version.
func (p *Partition) SetLanes(events, any LaneFunc) {
	p.events, p.any = events, any
	p.version++
}

// Lane returns the decider of the event's budget (Fields.Budget), or nil
// when the partition has none: the event names no budget it may spend.
func (p *Partition) Lane(e *Event) Decider {
	if p.events == nil {
		return nil
	}
	return p.events(e.Fields.Budget, e.Now)
}

// LaneOf returns the partition's decider of any budget of the worker by
// name, opening it at now when needed, or nil. A stage that keeps the
// answer between events asks again once Version changed: a decider kept
// across a change may no longer count.
func (p *Partition) LaneOf(budget string, now time.Time) Decider {
	if p.any == nil {
		return nil
	}
	return p.any(budget, now)
}

// Invalidate says that deciders returned so far may be stale (the worker
// released idle lanes, or the budgets changed); it changes Version.
func (p *Partition) Invalidate() { p.version++ }

// Version changes whenever deciders returned before may be stale
// (SetLanes, Invalidate).
func (p *Partition) Version() uint64 { return p.version }

// State is what a stage keeps across events that must follow the
// partition's transactions: the worker calls it at every commit, while
// the partition is idle.
type State interface {
	// Flush returns the records that write the changes since the last
	// commit, produced in the transaction about to end (now is the
	// commit's time).
	Flush(now time.Time) []*kgo.Record
	// Committed says that the transaction committed.
	Committed()
	// Aborted says that it aborted: the state goes back to the last
	// commit, as the partition is read again from there.
	Aborted()
}

// Keep makes the worker drive s with the partition's transactions. Call
// it from Stage.New.
func (p *Partition) Keep(s State) { p.kept = append(p.kept, s) }

// Kept returns the states kept with Keep, for the worker.
func (p *Partition) Kept() []State { return p.kept }
