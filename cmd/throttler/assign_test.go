package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/throttler/throttler/internal/testsupport/vendorcases"
	"github.com/throttler/throttler/splitter"
)

// assignConfig writes a worker config holding layers, with brokers that
// must never be dialled, and returns its path.
func assignConfig(t *testing.T, brokers string, layers []splitter.Layer) string {
	t.Helper()
	ls, err := yaml.Marshal(map[string]any{"layers": layers})
	if err != nil {
		t.Fatal(err)
	}
	body := "brokers: [" + brokers + "]\ntopics: {input: [events], output: passed}\nfields: {budget: campaign, key: user}\nbudgets: [{name: a, target: 10, period: 1m}]\n" + string(ls)
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// assignLines runs `throttler assign --json` and decodes its lines.
func assignLines(t *testing.T, args ...string) (int, []placementJSON, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, context.Background(), append([]string{"assign", "--json"}, args...)...)
	var out []placementJSON
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var p placementJSON
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, p)
	}
	return code, out, stderr
}

// TestAssignVendorCases runs every published vendor case that the
// splitter's tests run (internal/testsupport/vendorcases) through `throttler assign`,
// from a YAML config file: each key gets the vendor's variant. The brokers
// of the config are a listener that counts connections: none is made.
func TestAssignVendorCases(t *testing.T) {
	cases, err := vendorcases.Load(filepath.Join("..", "..", "splitter", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrap(t)
	passed := map[string]int{}
	for _, c := range cases {
		path := assignConfig(t, tr.ln.Addr().String(), []splitter.Layer{c.Layer})
		code, lines, stderr := assignLines(t, "--config", path, c.Key)
		if c.Refused {
			if code != exitFailure || !strings.Contains(stderr, "layers[0].experiments[0].variants") {
				t.Errorf("%s %q: exit %d, stderr %q; want the config refused", c.File, c.Name, code, stderr)
				continue
			}
			passed[c.Vendor]++
			continue
		}
		if code != exitOK || len(lines) != 1 {
			t.Errorf("%s %q: exit %d, %d lines, stderr %q", c.File, c.Name, code, len(lines), stderr)
			continue
		}
		l := lines[0]
		got := ""
		if l.Variant != nil {
			got = *l.Variant
		}
		if got != c.Want || l.Key != c.Key || l.Scheme != c.Vendor || (l.Variant != nil && l.Bucket == nil) {
			t.Errorf("%s %q, key %q: %+v, want variant %q", c.File, c.Name, c.Key, l, c.Want)
			continue
		}
		passed[c.Vendor]++
	}
	for _, vendor := range splitter.Schemes[1:] {
		total := 0
		for _, c := range cases {
			if c.Vendor == vendor {
				total++
			}
		}
		t.Logf("%s: %d/%d cases passed through throttler assign", vendor, passed[vendor], total)
		if total == 0 {
			t.Errorf("no %s case", vendor)
		}
	}
	if n := tr.conns.Load(); n != 0 {
		t.Errorf("assign connected %d times to the brokers", n)
	}
}

// TestAssignOutput checks both forms: a line per key and layer, the
// experiment and variant or none, the bucket or none.
func TestAssignOutput(t *testing.T) {
	gb := splitter.Experiment{Name: "my-test", Hash: splitter.SchemeGrowthBook,
		Variants: []splitter.Variant{{Name: "a", Weight: 0.5, Topic: "ga"}, {Name: "b", Weight: 0.5, Topic: "gb"}}}
	gb.Coverage = new(float64)
	*gb.Coverage = 0.4
	layers := []splitter.Layer{
		{Name: "ranking", Experiments: []splitter.Experiment{{Name: "new-ranker", Allocation: 40,
			Variants: []splitter.Variant{{Name: "control", Weight: 1, Topic: "rc"}, {Name: "treatment", Weight: 1, Topic: "rt"}}}}},
		{Name: "checkout", Experiments: []splitter.Experiment{gb}},
	}
	path := assignConfig(t, "127.0.0.1:9", layers)
	sp, err := splitter.New(layers)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"1", "2", ""} // GrowthBook's coverage cases: "1" out, "2" in; "" is never hashed
	code, lines, stderr := assignLines(t, append([]string{"--config", path}, keys...)...)
	if code != exitOK || len(lines) != 2*len(keys) {
		t.Fatalf("exit %d, lines %+v, stderr %q", code, lines, stderr)
	}
	for i, l := range lines {
		key := keys[i/2]
		p := sp.Place([]byte(key), nil)[i%2]
		if l.Key != key || l.Layer != p.Layer || l.Scheme != p.Scheme || (l.Variant != nil) != p.In ||
			(p.In && *l.Variant != p.Variant) || (l.Bucket != nil) != p.HasBucket || (p.HasBucket && *l.Bucket != p.Bucket) {
			t.Errorf("line %d = %+v, want %+v", i, l, p)
		}
	}
	if lines[3].Variant == nil || lines[1].Variant != nil || lines[5].Bucket != nil || lines[4].Bucket == nil {
		t.Errorf("lines %+v: want key 1 out of and key 2 in my-test, no bucket for the empty key in growthbook", lines)
	}

	code, stdout, _ := runCLI(t, context.Background(), "assign", "--config", path, "2")
	rows := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitOK || len(rows) != 3 || !strings.HasPrefix(rows[0], "KEY") ||
		!strings.Contains(rows[2], `"2"`) || !strings.Contains(rows[2], "growthbook") || !strings.Contains(rows[2], "my-test") {
		t.Errorf("table: exit %d\n%s", code, stdout)
	}
}

// TestAssignBadCommandLines checks that a bad flag or a missing argument
// exits 2 naming it, and a bad config exits 1 naming the field, with
// nothing on stdout.
func TestAssignBadCommandLines(t *testing.T) {
	bad := assignConfig(t, "127.0.0.1:9", []splitter.Layer{{Name: "l", Experiments: []splitter.Experiment{
		{Name: "e", Hash: "growthbok", Variants: []splitter.Variant{{Name: "v", Weight: 1, Topic: "t"}}}}}})
	good := assignConfig(t, "127.0.0.1:9", nil)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"assign"}, exitUsage, "no file: give it as the first argument (or with --config)"},
		{[]string{"assign", good}, exitUsage, "no key"},
		{[]string{"assign", "--config", good}, exitUsage, "no key"},
		{[]string{"assign", "--json=maybe", "--config", good, "k"}, exitUsage, "--json"},
		{[]string{"assign", "--brokers", "x", "--config", good, "k"}, exitUsage, "--brokers"},
		{[]string{"assign", "--config", filepath.Join(t.TempDir(), "missing.yaml"), "k"}, exitFailure, "missing.yaml"},
		{[]string{"assign", "--config", bad, "k"}, exitFailure, `layers[0].experiments[0].hash: must be one of throttler, growthbook, optimizely, statsig, unleash, got "growthbok"`},
	} {
		code, stdout, stderr := runCLI(t, context.Background(), tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}
