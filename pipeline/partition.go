package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
)

// Partition is what a stage knows of the partition it is built for
// (Stage.New): its names, its lanes, and the way to keep state in the
// partition's transactions. The worker creates one per assigned partition
// and updates its lanes when the budgets change; stages read it from the
// partition's goroutine only.
type Partition struct {
	Topic  string
	ID     int32
	Source string // "topic/partition"
	// Partitions is the partition count of Topic, 0 when unknown.
	Partitions int

	ctx     context.Context
	budgets *decode.BudgetTable
	lanes   []Decider
	byName  func(string) Decider
	version uint64
	kept    []State
}

// NewPartition returns a Partition of topic for tests and tools: lanes are
// the deciders by budget index, the decoder's own budgets apply, and its
// context never ends.
func NewPartition(topic string, id int32, partitions int, lanes ...Decider) *Partition {
	p := &Partition{Topic: topic, ID: id, Source: fmt.Sprintf("%s/%d", topic, id), Partitions: partitions, ctx: context.Background()}
	p.SetLanes(nil, lanes, nil)
	return p
}

// SetContext sets the context of the partition's assignment, which ends
// when the partition is revoked or the worker stops; stages that load
// state in New watch it.
func (p *Partition) SetContext(ctx context.Context) { p.ctx = ctx }

// Context returns the context of the partition's assignment.
func (p *Partition) Context() context.Context { return p.ctx }

// SetLanes sets the partition's budget table (nil: the decoder's), its
// deciders by budget index of that table, and byName, which finds the
// decider of any budget of the flow tree by name (nil: none). It is the
// worker's, called on the partition's goroutine between events.
func (p *Partition) SetLanes(budgets *decode.BudgetTable, lanes []Decider, byName func(string) Decider) {
	p.budgets, p.lanes, p.byName = budgets, lanes, byName
	p.version++
}

// Budgets returns the budget table events are indexed by, nil for the
// decoder's own.
func (p *Partition) Budgets() *decode.BudgetTable { return p.budgets }

// Lane returns the partition's decider of a budget index, or nil.
func (p *Partition) Lane(budgetIndex int) Decider {
	if budgetIndex < 0 || budgetIndex >= len(p.lanes) {
		return nil
	}
	return p.lanes[budgetIndex]
}

// LaneOf returns the partition's decider of a budget by name, or nil. It
// may cost a map lookup: a stage that asks for every event keeps the
// answer until Version changes.
func (p *Partition) LaneOf(budget string) Decider {
	if p.byName == nil {
		return nil
	}
	return p.byName(budget)
}

// Version changes whenever the lanes do (SetLanes).
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
