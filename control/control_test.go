package control

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/flow"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestRecordRoundTrip(t *testing.T) {
	bs := []config.Budget{
		{Name: "camp-a", Target: 12000, Begin: t0, End: t0.Add(time.Hour), Reserve: 30 * time.Second, Kind: config.KindRewards, Scored: true, Parent: "acct"},
		{Name: "clicks", Target: 300, Begin: t0, End: t0.Add(time.Hour), Kind: config.KindRewards, Conversion: 0.02, RewardDelay: 15 * time.Second},
		{Name: "acct", Target: 100, Period: time.Minute, Kind: config.KindPasses},
	}
	for _, b := range bs {
		k, v, err := EncodeSet(b)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Decode(k, v)
		if err != nil || r.Op != OpSet || r.Name != b.Name || !r.Budget.Begin.Equal(b.Begin) || r.Budget.Flow() != b.Flow() {
			t.Fatalf("%s: got %+v, %v", v, r, err)
		}
	}
	k, v, err := EncodeDelete("acct")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Decode(k, v); err != nil || r.Op != OpDelete || r.Name != "acct" {
		t.Fatalf("delete: %+v, %v", r, err)
	}
	if r, err := Decode([]byte("acct"), nil); err != nil || r.Op != OpReset {
		t.Fatalf("tombstone: %+v, %v", r, err)
	}
	if _, _, err := EncodeSet(config.Budget{Name: "x", Target: -1, Period: time.Second}); err == nil || !strings.Contains(err.Error(), "target") {
		t.Fatalf("EncodeSet of a bad budget: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		key, val, field string
	}{
		{"", `{"version":1}`, ""},
		{"a", `[1]`, ""},
		{"a", `{"name":"a","target":1,"period":"1s"}`, "version"},
		{"a", `{"version":2,"name":"a"}`, "version"},
		{"a", `{"version":1,"name":"b","target":1,"period":"1s"}`, "name"},
		{"a", `{"version":1,"name":"a","target":1,"period":"1s","colour":"red"}`, ""},
		{"a", `{"version":1,"name":"a","period":"1s"}`, "target"},
		{"a", `{"version":1,"name":"a","target":1,"period":"soon"}`, "period"},
		{"a", `{"version":1,"name":"a","target":1,"begin":"today","end":"2026-01-01T00:00:00Z"}`, "begin"},
		{"a", `{"version":1,"name":"a","deleted":true,"target":1}`, "deleted"},
		{"a", `{"version":1,"name":"a","deleted":true,"conversion":0.1}`, "deleted"},
		{"a", `{"version":1,"name":"a","target":1,"period":"1s","kind":"rewards","reward_delay":"later"}`, "reward_delay"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.key), []byte(c.val))
		var re *RecordError
		if !errors.As(err, &re) || re.Field != c.field || !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s %s: got %v, want a RecordError on %q", c.key, c.val, err, c.field)
		}
	}
	// The config file's rules, with the field named.
	for val, field := range map[string]string{
		`{"version":1,"name":"a","target":0,"period":"1s"}`:                                                             "target",
		`{"version":1,"name":"a","target":5,"begin":"2026-01-02T00:00:00Z","end":"2026-01-01T00:00:00Z"}`:               "end",
		`{"version":1,"name":"a","target":5,"period":"1s","kind":"clicks"}`:                                             "kind",
		`{"version":1,"name":"a","target":5,"period":"1s","parent":"a"}`:                                                "parent",
		`{"version":1,"name":"a","target":5,"period":"1s","conversion":0.1}`:                                            "conversion",
		`{"version":1,"name":"a","target":5,"period":"1s","kind":"rewards","conversion":-1}`:                            "conversion",
		`{"version":1,"name":"a","target":5,"period":"1s","kind":"rewards","reward_delay":"-1s"}`:                       "reward_delay",
		`{"version":1,"name":"a","target":5,"period":"1s","begin":"2026-01-02T00:00:00Z","end":"2026-01-03T00:00:00Z"}`: "period",
	} {
		_, err := Decode([]byte("a"), []byte(val))
		var re *RecordError
		if !errors.As(err, &re) || re.Field != field {
			t.Errorf("%s: got %v, want an error on %s", val, err, field)
		}
	}
}

func set(name string, target float64, parent string) Record {
	return Record{Name: name, Op: OpSet, Budget: config.Budget{Name: name, Target: target, Period: time.Minute, Kind: config.KindPasses, Parent: parent}}
}

// try validates a set as a flow tree would.
func try(bs []flow.Budget) error {
	_, err := flow.NewTree(bs)
	return err
}

func names(bs []flow.Budget) string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return strings.Join(out, ",")
}

func TestState(t *testing.T) {
	base := []flow.Budget{{Name: "b", Target: 10, Period: time.Minute}, {Name: "a", Target: 10, Period: time.Minute}}
	s := newState(base)
	// A child before its parent waits, then applies with the parent.
	acc, wait := s.apply(set("child", 5, "new"), try)
	if len(acc) != 0 || wait["child"] == nil || names(s.budgets()) != "b,a" {
		t.Fatalf("child first: accepted %v, waiting %v, budgets %s", acc, wait, names(s.budgets()))
	}
	acc, wait = s.apply(set("new", 50, ""), try)
	if len(acc) != 2 || len(wait) != 0 || names(s.budgets()) != "b,a,child,new" {
		t.Fatalf("parent: accepted %v, waiting %v, budgets %s", acc, wait, names(s.budgets()))
	}
	// A config budget replaced, then deleted, then reset to the file's.
	s.apply(set("a", 99, ""), try)
	if got := s.budgets()[1].Target; got != 99 {
		t.Fatalf("a's target %v, want 99", got)
	}
	s.apply(Record{Name: "a", Op: OpDelete}, try)
	if names(s.budgets()) != "b,child,new" {
		t.Fatalf("after deleting a: %s", names(s.budgets()))
	}
	s.apply(Record{Name: "a", Op: OpReset}, try)
	if bs := s.budgets(); names(bs) != "b,a,child,new" || bs[1].Target != 10 {
		t.Fatalf("after resetting a: %+v", bs)
	}
	// Deleting a parent still in use waits; the parent stays.
	_, wait = s.apply(Record{Name: "new", Op: OpDelete}, try)
	if wait["new"] == nil || names(s.budgets()) != "b,a,child,new" {
		t.Fatalf("delete a parent: waiting %v, budgets %s", wait, names(s.budgets()))
	}
	// Once the child moves away, the deletion applies.
	acc, _ = s.apply(set("child", 5, "b"), try)
	if len(acc) != 2 || names(s.budgets()) != "b,a,child" {
		t.Fatalf("child moved: accepted %v, budgets %s", acc, names(s.budgets()))
	}
}

func TestDelayRecords(t *testing.T) {
	b := config.Budget{Name: "d", Target: 100, Period: time.Minute, Action: config.ActionDelay}
	k, v, err := EncodeSet(b)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Decode(k, v); err != nil || r.Budget.Action != config.ActionDelay || !r.Budget.Flow().Delay {
		t.Fatalf("delay budget: %+v, %v", r, err)
	}
	for val, field := range map[string]string{
		`{"version":1,"name":"d","target":5,"period":"1m","action":"wait"}`:                  "action",
		`{"version":1,"name":"d","target":5,"period":"1m","action":"delay","parent":"acct"}`: "parent",
		`{"version":1,"name":"d","target":5,"period":"1m","action":"delay","scored":true}`:   "scored",
	} {
		_, err := Decode([]byte("d"), []byte(val))
		var re *RecordError
		if !errors.As(err, &re) || re.Field != field {
			t.Errorf("%s: got %v, want an error on %s", val, err, field)
		}
	}
	// A parent that exists elsewhere is not judged on the record alone.
	if _, err := Decode([]byte("c"), []byte(`{"version":1,"name":"c","target":5,"period":"1m","parent":"acct"}`)); err != nil {
		t.Fatalf("child of another budget: %v", err)
	}
}

// TestRecordErrorBounded: a record's key of 1 MiB makes an error of a few
// hundred bytes, not a line of megabytes.
func TestRecordErrorBounded(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 1<<20)
	for _, val := range [][]byte{[]byte(`{"version":1}`), []byte("not json"), []byte(`{"version":1,"name":"x","deleted":true}`)} {
		_, err := Decode(key, val)
		if err == nil || len(err.Error()) > 1024 {
			t.Fatalf("value %s: error of %d bytes (%v)", val, len(fmt.Sprint(err)), err != nil)
		}
	}
}
