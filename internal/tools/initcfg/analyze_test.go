package initcfg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// t0 is the instant of every sample.
var t0 = time.Date(2026, 11, 28, 10, 30, 0, 0, time.UTC)

// loadgenRecords returns n events of the load generator (campaigns a:3,
// b:1, c:1 by weight) in format enc, one every 10ms up to t0, keyed by
// user as loadgen.Run keys them.
func loadgenRecords(t *testing.T, n int, enc loadgen.Encoder) []Record {
	t.Helper()
	g, err := loadgen.New(loadgen.Config{Seed: 7, Budgets: []loadgen.Budget{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, n)
	for i := range recs {
		at := t0.Add(-time.Duration(n-i) * 10 * time.Millisecond)
		e := g.Next(at)
		recs[i] = Record{Key: []byte(e.User), Value: enc.Append(nil, &e), Timestamp: at, Offset: int64(i)}
	}
	return recs
}

// fixedSchemas is a decode.Schemas of fixed schemas.
type fixedSchemas map[int]decode.Schema

func (f fixedSchemas) Schema(id int) (decode.Schema, error) {
	s, ok := f[id]
	if !ok {
		return s, decode.ErrUnknownSchema
	}
	return s, nil
}

// checkFields checks the proposed path of every role.
func checkFields(t *testing.T, r *Report, want map[Role]string) {
	t.Helper()
	for _, role := range Roles {
		if got := r.Fields[role].Path; got != want[role] {
			t.Errorf("%s: proposed %q (%s), want %q", role, got, r.Fields[role].Reason, want[role])
		}
	}
}

// loadgenFields are the paths of the load generator's events.
var loadgenFields = map[Role]string{RoleBudget: "campaign", RoleKey: "user", RoleID: "id", RoleScore: "score", RoleTime: "ts"}

func TestAnalyzeLoadgenFormats(t *testing.T) {
	avro, _ := loadgen.NewEncoder(loadgen.FormatAvro, 3)
	proto, _ := loadgen.NewEncoder(loadgen.FormatProtobuf, 4)
	schemas := fixedSchemas{
		3: {Format: decode.FormatAvro, Text: loadgen.AvroSchema},
		4: {Format: decode.FormatProtobuf, Text: loadgen.ProtobufSchema},
	}
	for _, tc := range []struct {
		format string
		enc    loadgen.Encoder
	}{{"json", loadgen.Encoder{}}, {"avro", avro}, {"protobuf", proto}} {
		t.Run(tc.format, func(t *testing.T) {
			r, err := Analyze(context.Background(), "events", loadgenRecords(t, 1000, tc.enc), schemas, t0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tc.format || r.Events != 1000 || r.Bad != 0 || len(r.Paths) != 5 {
				t.Fatalf("format %s, %d events, %d bad, %d paths", r.Format, r.Events, r.Bad, len(r.Paths))
			}
			checkFields(t, r, loadgenFields)
			var names []string
			for _, b := range r.Budgets {
				names = append(names, b.Name)
			}
			if strings.Join(names, ",") != "a,b,c" || r.Rarer != 0 {
				t.Errorf("budgets %v, %d rarer", names, r.Rarer)
			}
			// 1000 events over 9.99 s, "a" about 3/5 of them: ~60/s.
			if a := r.Budgets[0]; a.Rate < 50 || a.Rate > 70 {
				t.Errorf("rate of a %.1f/s, want about 60", a.Rate)
			}
			ts := r.Stats("ts")
			if ts.Millis != 1000 || !ts.Last.Equal(t0.Add(-10*time.Millisecond)) {
				t.Errorf("ts: %d millis, last %v", ts.Millis, ts.Last)
			}
			checkStarter(t, r)
		})
	}
}

// checkStarter writes r's starter config and checks that config.Parse
// accepts it with the proposed fields and a budget per value.
func checkStarter(t *testing.T, r *Report) *config.Config {
	t.Helper()
	var b strings.Builder
	if err := WriteConfig(&b, r, Target{Brokers: []string{"127.0.0.1:9092"}, Registry: "http://127.0.0.1:8081"}); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("the starter config does not parse: %v\n%s", err, b.String())
	}
	f := c.Fields
	got := map[Role]string{RoleBudget: f.Budget, RoleKey: f.Key, RoleID: f.ID, RoleScore: f.Score, RoleTime: f.Time}
	for _, role := range Roles {
		if got[role] != r.Fields[role].Path {
			t.Errorf("fields.%s = %q, proposed %q", role, got[role], r.Fields[role].Path)
		}
	}
	if len(c.Budgets) != len(r.Budgets) {
		t.Fatalf("%d budgets, want %d", len(c.Budgets), len(r.Budgets))
	}
	for i, bud := range c.Budgets {
		if bud.Name != r.Budgets[i].Name || !bud.Begin.Equal(r.Now.Truncate(time.Minute)) || bud.End.Sub(bud.Begin) != Window || !(bud.Target >= 1) {
			t.Errorf("budget %d: %+v", i, bud)
		}
	}
	if r.Format != "json" && (c.Format.Input != r.Format || len(c.SchemaRegistry.URLs) != 1) {
		t.Errorf("format %q, registry %v", c.Format.Input, c.SchemaRegistry.URLs)
	}
	return c
}

// TestAnalyzeByValues: fields with names that say nothing are proposed by
// their values alone.
func TestAnalyzeByValues(t *testing.T) {
	var recs []Record
	for i := range 400 {
		at := t0.Add(-time.Duration(400-i) * time.Second)
		user := fmt.Sprintf("u%d", (i*7)%60)
		v, _ := json.Marshal(map[string]any{
			"f1": map[string]any{"f2": []string{"north", "south", "north", "east"}[i%4]}, // budget
			"f3": user,                                                                   // key (the record key)
			"f4": 100000 + i,                                                             // id: unique integers
			"f5": float64(i%17) / 3,                                                      // score
			"f6": at.Format(time.RFC3339),                                                // time, RFC 3339
			"f7": at.Unix(),                                                              // Unix seconds: not the time
			"f8": i%2 == 0,                                                               // boolean
			"f9": []int{1, 2},                                                            // a list
		})
		recs = append(recs, Record{Key: []byte(user), Value: v, Timestamp: at})
	}
	recs = append(recs, Record{Value: []byte("not json")})
	r, err := Analyze(context.Background(), "t", recs, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	checkFields(t, r, map[Role]string{RoleBudget: "f1.f2", RoleKey: "f3", RoleID: "f4", RoleScore: "f5", RoleTime: "f6"})
	if r.Bad != 1 || r.Events != 400 {
		t.Errorf("%d bad, %d events", r.Bad, r.Events)
	}
	if s := r.Stats("f7"); s.Seconds != 400 || s.Millis != 0 {
		t.Errorf("f7: %+v", s)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"f7 holds Unix seconds", "1 of 401 records are not json events"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if s := r.Stats("f9"); s.Kind() != Nested {
		t.Errorf("f9: kind %v", s.Kind())
	}
	checkStarter(t, r)
}

// TestAnalyzeEmptyRoles: roles no field fits stay empty, and say why.
func TestAnalyzeEmptyRoles(t *testing.T) {
	var recs []Record
	for i := range 50 {
		v, _ := json.Marshal(map[string]any{"campaign": []string{"x", "y"}[i%2], "flag": true})
		recs = append(recs, Record{Value: v, Timestamp: t0})
	}
	r, err := Analyze(context.Background(), "t", recs, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	checkFields(t, r, map[Role]string{RoleBudget: "campaign"})
	if !strings.Contains(r.Fields[RoleTime].Reason, "record timestamp") || r.Span != 0 || r.Budgets[0].Rate != 0 {
		t.Errorf("time: %+v, span %v, budgets %+v", r.Fields[RoleTime], r.Span, r.Budgets)
	}
	c := checkStarter(t, r)
	if c.Budgets[0].Target != 25000 {
		t.Errorf("target %v without a span, want 25 × 1000", c.Budgets[0].Target)
	}
}

func TestAnalyzeBudgetValues(t *testing.T) {
	var recs []Record
	add := func(name string, n int) {
		for range n {
			v, _ := json.Marshal(map[string]any{"campaign": name})
			recs = append(recs, Record{Value: v})
		}
	}
	add("big", 500)
	add("mid", 100)
	add(" padded", 50) // cannot name a budget
	for i := range 9 {
		add(fmt.Sprintf("rare-%d", i), 5) // under 1%
	}
	r, err := Analyze(context.Background(), "t", recs, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Budgets) != 2 || r.Budgets[0].Name != "big" || r.Budgets[1].Name != "mid" || r.Rarer != 9 {
		t.Fatalf("budgets %+v, %d rarer", r.Budgets, r.Rarer)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "1 values of campaign cannot name a budget") {
		t.Errorf("notes %q", r.Notes)
	}
	checkStarter(t, r)
}

func TestAnalyzeErrors(t *testing.T) {
	avro, _ := loadgen.NewEncoder(loadgen.FormatAvro, 3)
	framed := loadgenRecords(t, 10, avro)
	if _, err := Analyze(context.Background(), "t", framed, nil, t0); !errors.Is(err, ErrNeedRegistry) || !strings.Contains(err.Error(), "the first 3") {
		t.Errorf("framed without registry: %v", err)
	}
	if _, err := Analyze(context.Background(), "t", nil, nil, t0); err == nil {
		t.Error("no records: no error")
	}
	if _, err := Analyze(context.Background(), "t", []Record{{Value: []byte("[1]")}}, nil, t0); err == nil {
		t.Error("no event: no error")
	}
	// No string field: nothing can name the budget.
	var recs []Record
	for i := range 20 {
		v, _ := json.Marshal(map[string]any{"n": i})
		recs = append(recs, Record{Value: v})
	}
	r, err := Analyze(context.Background(), "t", recs, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(&strings.Builder{}, r, Target{Brokers: []string{"b:1"}}); err == nil || !strings.Contains(err.Error(), "n (number)") {
		t.Errorf("WriteConfig: %v", err)
	}
}
