package control

import (
	"fmt"
	"testing"
	"time"

	"github.com/throttler/throttler/flow"
)

// tryTree judges a batch as a flow tree would, counting the calls.
func tryTree(calls *int) func(*Batch) error {
	return func(b *Batch) error {
		*calls++
		return try(b.budgets())
	}
}

func TestApplyBatchWhole(t *testing.T) {
	s := newState([]flow.Budget{{Name: "a", Target: 10, Period: time.Minute}})
	var rs []Record
	for i := range 1000 {
		rs = append(rs, set(fmt.Sprintf("c%04d", i), 5, "acct")) // children first
	}
	rs = append(rs, set("acct", 100, ""), set("c0000", 7, "acct")) // the last of a name counts
	var calls int
	acc, wait := s.ApplyBatch(rs, tryTree(&calls))
	if calls != 1 || len(acc) != 1001 || len(wait) != 0 {
		t.Fatalf("calls %d, accepted %d, waiting %v", calls, len(acc), wait)
	}
	if b, ok := s.Budget("c0000"); !ok || b.Target != 7 {
		t.Fatalf("c0000 = %+v, %v: want the batch's last record", b, ok)
	}
	if got := len(s.budgets()); got != 1002 {
		t.Fatalf("%d budgets, want 1002", got)
	}
}

func TestApplyBatchSplitsAroundBadRecords(t *testing.T) {
	s := newState(nil)
	var rs []Record
	for i := range 1024 {
		parent := ""
		if i == 300 || i == 700 {
			parent = "nobody" // waits
		}
		rs = append(rs, set(fmt.Sprintf("c%04d", i), 5, parent))
	}
	var calls int
	acc, wait := s.ApplyBatch(rs, tryTree(&calls))
	if len(acc) != 1022 || len(wait) != 2 || wait["c0300"] == nil || wait["c0700"] == nil {
		t.Fatalf("accepted %d, waiting %v", len(acc), wait)
	}
	// Each bad record costs a walk down the halves (two tries a level,
	// ten levels), and the two waiting records one more split once the
	// others are in: 1 + 2 x 2 x 10 + 3 at most, not one try per record.
	if calls > 1+2*2*10+3 {
		t.Fatalf("%d tries for 2 bad records among 1024", calls)
	}
	// The parent arrives: both waiting records apply after it.
	acc, wait = s.ApplyBatch([]Record{set("nobody", 50, "")}, tryTree(&calls))
	if len(acc) != 3 || len(wait) != 0 {
		t.Fatalf("after the parent: accepted %v, waiting %v", acc, wait)
	}
	// A newer record of a waiting name replaces it.
	s.ApplyBatch([]Record{set("x", 1, "missing")}, tryTree(&calls))
	acc, wait = s.ApplyBatch([]Record{set("x", 1, "")}, tryTree(&calls))
	if len(acc) != 1 || len(wait) != 0 || len(s.waiting) != 0 {
		t.Fatalf("replaced: accepted %v, waiting %v (%v)", acc, wait, s.waiting)
	}
}

func TestBatchChanges(t *testing.T) {
	s := newState([]flow.Budget{{Name: "base", Target: 10, Period: time.Minute}})
	s.ApplyBatch([]Record{set("base", 20, ""), set("added", 5, "")}, tryTree(new(int)))
	var got []Change
	s.ApplyBatch([]Record{
		{Name: "base", Op: OpReset},   // back to the base's definition
		{Name: "added", Op: OpDelete}, // removed
		{Name: "ghost", Op: OpDelete}, // not in force: no change
		set("new", 3, ""),
	}, func(b *Batch) error { got = b.Changes(); return nil })
	want := []Change{
		{Budget: flow.Budget{Name: "base", Target: 10, Period: time.Minute}},
		{Budget: flow.Budget{Name: "added"}, Delete: true},
		{Budget: flow.Budget{Name: "new", Target: 3, Period: time.Minute}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes\n%v\nwant\n%v", got, want)
	}
	if names(s.budgets()) != "base,new" {
		t.Fatalf("budgets %s", names(s.budgets()))
	}
}

// TestStateBaseFromTheTarget: the base is looked up in the set the
// accepted changes are applied to (as the worker's flow tree is), so it
// holds overridden definitions once a record is accepted; a reset still
// restores the config's definition, and a budget deleted and reset comes
// back as it was.
func TestStateBaseFromTheTarget(t *testing.T) {
	target := map[string]flow.Budget{
		"a": {Name: "a", Target: 10, Period: time.Minute},
		"b": {Name: "b", Target: 20, Period: time.Minute},
	}
	s := NewState(func(name string) (flow.Budget, bool) { b, ok := target[name]; return b, ok })
	applyTo := func(b *Batch) error {
		for _, c := range b.Changes() {
			if c.Delete {
				delete(target, c.Budget.Name)
			} else {
				target[c.Budget.Name] = c.Budget
			}
		}
		return nil
	}
	step := func(what string, r Record, want map[string]float64) {
		t.Helper()
		if acc, wait := s.ApplyBatch([]Record{r}, applyTo); len(acc) != 1 || len(wait) != 0 {
			t.Fatalf("%s: accepted %v, waiting %v", what, acc, wait)
		}
		got := map[string]float64{}
		for name, b := range target {
			got[name] = b.Target
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: targets %v, want %v", what, got, want)
		}
		for name, w := range want {
			if b, ok := s.Budget(name); !ok || b.Target != w {
				t.Fatalf("%s: State's %s = %+v, %v, want target %v", what, name, b, ok, w)
			}
		}
	}
	step("a overridden", set("a", 99, ""), map[string]float64{"a": 99, "b": 20})
	step("a overridden again", set("a", 98, ""), map[string]float64{"a": 98, "b": 20})
	step("a reset", Record{Name: "a", Op: OpReset}, map[string]float64{"a": 10, "b": 20})
	step("b deleted", Record{Name: "b", Op: OpDelete}, map[string]float64{"a": 10})
	step("b reset", Record{Name: "b", Op: OpReset}, map[string]float64{"a": 10, "b": 20})
	step("c added", set("c", 5, ""), map[string]float64{"a": 10, "b": 20, "c": 5})
	step("c reset", Record{Name: "c", Op: OpReset}, map[string]float64{"a": 10, "b": 20})
}
