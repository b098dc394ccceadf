package integration

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	. "github.com/throttler/throttler/integration/suite"
)

// TestCLIAsUsersExpect drives each row of the table that asked for the CLI
// as users of kubectl, promtool, kcat and rpk expect it, through the built
// binary.
func TestCLIAsUsersExpect(t *testing.T) {
	t.Run("version", func(t *testing.T) {
		// What the toolchain recorded in the binary, as `go version -m`
		// reads it, is what the binary says of itself.
		meta, err := exec.Command("go", "version", "-m", Bin).Output()
		if err != nil {
			t.Fatal(err)
		}
		field := func(re string) string {
			m := regexp.MustCompile(re).FindSubmatch(meta)
			if m == nil {
				return ""
			}
			return string(m[1])
		}
		goVersion := field(`^\S+: (go\S+)`)
		version := field(`(?m)^\tmod\tgithub.com/throttler/throttler\t(\S+)`)
		franz := field(`(?m)^\tdep\tgithub.com/twmb/franz-go\t(\S+)`)
		commit := field(`(?m)^\tbuild\tvcs.revision=(\S+)`)
		if goVersion == "" || version == "" || franz == "" {
			t.Fatalf("go version -m: %s", meta)
		}
		wantCommit := "unknown (built without VCS information)"
		if commit != "" {
			wantCommit = commit
		}
		for _, args := range [][]string{{"--version"}, {"version"}, {"validate", "--version"}} {
			code, stdout, stderr := RunBin(t, args...)
			for _, want := range []string{"throttler " + version + "\n", "commit:      " + wantCommit, "go:          " + goVersion + "\n", "franz-go:    " + franz + "\n"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("%v: stdout lacks %q:\n%s", args, want, stdout)
				}
			}
			if code != 0 || stderr != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
			}
		}
	})

	const valid = `brokers: [127.0.0.1:9092]
topics: {input: [events], output: passed}
fields: {budget: campaign}
budgets:
  - {name: a, target: 100, period: 1m}
`
	t.Run("validate FILE", func(t *testing.T) {
		if code, stdout, stderr := RunBin(t, "validate", WriteFile(t, "good.yaml", valid)); code != 0 || stdout != "ok\n" || stderr != "" {
			t.Errorf("good.yaml: exit %d, %q, %q", code, stdout, stderr)
		}
		code, stdout, stderr := RunBin(t, "validate", WriteFile(t, "bad.yaml", valid+"colour: red\n"))
		if code != 1 || stdout != "colour: unknown field (line 6)\n" || stderr != "" {
			t.Errorf("bad.yaml: exit %d, %q, %q", code, stdout, stderr)
		}
	})

	t.Run("every problem at once", func(t *testing.T) {
		file := WriteFile(t, "four.yaml", `brokers: [127.0.0.1:9092]
topics: {input: [events], output: events}
fields: {budget: campaign}
budgets:
  - {name: a, target: 100, period: 1m}
  - name: b
    target: 100
    begn: 2026-11-22T10:00:00Z
    end: 2026-11-22T11:00:00Z
  - {name: c, target: lots, period: 1m}
delivery: twice
`)
		code, stdout, _ := RunBin(t, "validate", file)
		want := "topics.output: topic \"events\" is also topics.input[0] (line 2)\n" +
			"budgets[1].begn: unknown field; did you mean `begin`? (line 8)\n" +
			"budgets[2].target: want a number, got \"lots\" (line 10)\n" +
			"delivery: must be \"exactly-once\" or \"at-least-once\", got \"twice\" (line 11)\n"
		if code != 1 || stdout != want {
			t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, stdout, want)
		}
	})

	t.Run("allocation is required", func(t *testing.T) {
		file := WriteFile(t, "alloc.yaml", valid+`layers:
  - name: ranking
    experiments:
      - name: new-ranking
        variants: [{name: control, weight: 1, topic: control}, {name: treatment, weight: 1, topic: treatment}]
`)
		code, stdout, _ := RunBin(t, "validate", file)
		want := "layers[0].experiments[0].allocation: is required (must be a percentage more than 0 and at most 100) (line 9)\n"
		if code != 1 || stdout != want {
			t.Errorf("exit %d, stdout %q, want %q", code, stdout, want)
		}
	})
}
