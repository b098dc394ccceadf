package control

import (
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/config"
)

func TestPlanImport(t *testing.T) {
	leaf := config.Budget{Name: "leaf", Target: 1, Period: time.Minute, Parent: "mid"}
	mid := config.Budget{Name: "mid", Target: 2, Period: time.Minute, Parent: "top"}
	top := config.Budget{Name: "top", Target: 3, Period: time.Minute, Kind: config.KindPasses, Action: config.ActionReject}
	same := config.Budget{Name: "same", Target: 4, Begin: t0, End: t0.Add(time.Hour)}
	other := config.Budget{Name: "other", Target: 5, Period: time.Minute, Parent: "elsewhere"}
	current := map[string]Record{
		"top":  {Name: "top", Op: OpSet, Budget: config.Budget{Name: "top", Target: 3, Period: time.Minute}}, // defaults left empty: the same
		"same": {Name: "same", Op: OpSet, Budget: config.Budget{Name: "same", Target: 4, Begin: t0.In(time.UTC), End: t0.Add(time.Hour), Kind: config.KindPasses}},
		"mid":  {Name: "mid", Op: OpSet, Budget: config.Budget{Name: "mid", Target: 20, Period: time.Minute, Parent: "top"}}, // changed
		"leaf": {Name: "leaf", Op: OpDelete},                                                                                 // deleted: added again
	}
	im, err := PlanImport([]config.Budget{leaf, mid, top, same, other}, current)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, b := range im.Write {
		order = append(order, b.Name)
	}
	// top is not written: mid and other (whose parent is elsewhere) are
	// roots of what is written, in file order, and leaf follows mid.
	if got := strings.Join(order, ","); got != "mid,other,leaf" {
		t.Fatalf("write order %s", got)
	}
	if im.Added != 2 || im.Changed != 1 || im.Unchanged != 2 {
		t.Fatalf("counts %+v", im)
	}
	// Written, then planned again: nothing to write.
	for _, b := range im.Write {
		current[b.Name] = Record{Name: b.Name, Op: OpSet, Budget: b}
	}
	if im, _ = PlanImport([]config.Budget{leaf, mid, top, same, other}, current); len(im.Write) != 0 || im.Unchanged != 5 {
		t.Fatalf("second import %+v", im)
	}
}

func TestParentsFirstChain(t *testing.T) {
	var bs []config.Budget
	names := []string{"d", "c", "b", "a"} // each the child of the next
	for i, n := range names {
		b := config.Budget{Name: n, Target: 1, Period: time.Minute}
		if i+1 < len(names) {
			b.Parent = names[i+1]
		}
		bs = append(bs, b)
	}
	var got []string
	for _, b := range parentsFirst(bs) {
		got = append(got, b.Name)
	}
	if strings.Join(got, "") != "abcd" {
		t.Fatalf("order %v", got)
	}
}
