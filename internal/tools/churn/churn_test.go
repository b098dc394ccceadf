package churn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/control"
	"github.com/throttler/throttler/internal/tools/broker"
)

func TestPlanner(t *testing.T) {
	light := []config.Budget{{Name: "light-0", Target: 10, Period: time.Minute}, {Name: "light-1", Target: 10, Period: time.Minute}}
	p, err := NewPlanner(Config{Topic: "c", Rate: 1, Change: light, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var kinds, names []string
	for range 7 {
		key, val, kind, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		r, err := control.Decode(key, val)
		if err != nil {
			t.Fatal(err)
		}
		kinds, names = append(kinds, kind), append(names, r.Name)
		if kind == "change" && (r.Budget.Target < 5 || r.Budget.Target > 20 || !strings.HasPrefix(r.Name, "light-")) {
			t.Errorf("change %+v: target out of 0.5-2 x 10", r.Budget)
		}
	}
	if got := strings.Join(kinds, ","); got != "add,change,delete,add,change,delete,add" {
		t.Fatalf("kinds %s", got)
	}
	if names[0] != "churn-000000" || names[2] != "churn-000000" || names[3] != "churn-000001" || names[5] != "churn-000001" {
		t.Fatalf("names %v", names)
	}
	// Nothing to change: adds instead.
	p, _ = NewPlanner(Config{Topic: "c", Rate: 1})
	for _, want := range []string{"add", "add", "delete"} {
		if _, _, kind, _ := p.Next(); kind != want {
			t.Fatalf("kind %s, want %s", kind, want)
		}
	}
	for _, bad := range []Config{{Rate: 1}, {Topic: "c"}, {Topic: "c", Rate: 1, Duration: -1}} {
		if _, err := NewPlanner(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := broker.Start(ctx, broker.Addr("127.0.0.1:0"), broker.Partitions(1), broker.SeedTopics("c"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, _ := NewPlanner(Config{Topic: "c", Rate: 300, Duration: 200 * time.Millisecond})
	sum, err := Run(ctx, cl, p)
	if err != nil {
		t.Fatal(err)
	}
	n := sum.Adds + sum.Changes + sum.Deletes
	// 300/s for 0.2 s: what the ticks made due, at most 60.
	if n == 0 || n > 60 || sum.Changes != 0 || sum.Deletes > sum.Adds {
		t.Fatalf("summary %+v", sum)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.ConsumeTopics("c"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := 0
	for got < n {
		got += rd.PollFetches(ctx).NumRecords()
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", got, n)
		}
	}
}
