package splitter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/throttler/throttler/internal/testsupport/vendorcases"
	"github.com/throttler/throttler/splitter"
)

// TestVendorAssignmentVectors runs the vendors' published assignment cases
// (splitter/testdata, see its README) through New and Assign: each key
// must get the vendor's variant, or no assignment when the vendor puts it
// in no experiment. It logs the count per file, passed/total.
func TestVendorAssignmentVectors(t *testing.T) {
	cases, err := vendorcases.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ passed, total int }
	counts := map[string]*tally{}
	var files []string
	for _, c := range cases {
		n := counts[c.File]
		if n == nil {
			n = &tally{}
			counts[c.File] = n
			files = append(files, c.File)
		}
		n.total++
		if msg := runVendorCase(c); msg != "" {
			t.Errorf("%s %q, key %q: %s", c.File, c.Name, c.Key, msg)
			continue
		}
		n.passed++
	}
	for _, f := range files {
		t.Logf("%s: %d/%d cases passed", f, counts[f].passed, counts[f].total)
	}
	for _, vendor := range splitter.Schemes[1:] {
		found := false
		for _, c := range cases {
			found = found || c.Vendor == vendor
		}
		if !found {
			t.Errorf("no %s case was loaded", vendor)
		}
	}
}

// runVendorCase returns what is wrong with the splitter's answer to c, ""
// when nothing is.
func runVendorCase(c vendorcases.Case) string {
	s, err := splitter.New([]splitter.Layer{c.Layer})
	if c.Refused {
		if !errors.Is(err, splitter.ErrInvalidConfig) {
			return "the configuration should be refused, New returned " + errString(err)
		}
		return ""
	}
	if err != nil {
		return "New: " + err.Error()
	}
	got := ""
	as := s.Assign([]byte(c.Key), nil)
	if len(as) == 1 {
		got = as[0].Variant
	}
	if got != c.Want || len(as) > 1 {
		return "got variant " + strings.TrimSpace(got+" (none if empty)") + ", want " + quoteOrNone(c.Want)
	}
	return ""
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
