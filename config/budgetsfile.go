package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// MaxBudgetLine bounds a line of a budgets file (ReadBudgets).
const MaxBudgetLine = 1 << 20

// The fields of a budget line, as indices of budgetKeys.
const (
	keyName = iota
	keyTarget
	keyBegin
	keyEnd
	keyReserve
	keyPeriod
	keyKind
	keyScored
	keyParent
	keyAction
)

// budgetKeys are the fields of a budget line: the config file's names.
var budgetKeys = [...]string{
	keyName: "name", keyTarget: "target", keyBegin: "begin", keyEnd: "end", keyReserve: "reserve",
	keyPeriod: "period", keyKind: "kind", keyScored: "scored", keyParent: "parent", keyAction: "action",
}

// ReadBudgets reads budgets in JSON lines: one JSON object a line, with a
// budget's fields under their config-file names (name, target, begin,
// end, reserve, period, kind, scored, parent, action), times in RFC 3339
// and durations as Go writes them ("30s", "1h"):
//
//	{"name":"campaign/000001","target":15000,"begin":"2026-11-22T10:00:00Z","end":"2026-11-22T12:00:00Z","parent":"account/7"}
//	{"name":"account/7","target":100000,"period":"1h"}
//
// Blank lines and lines starting with '#' are skipped. It checks the
// form of each line (JSON, known fields, the type of each value), not the
// budgets: Validate (through budgets_file) or CheckBudgetLines does that.
// file names the input in problems. It returns the budgets, the line of
// each, and the problems, each with File and Line set and Path naming the
// field ("" for the line as a whole). An error reading r is a problem of
// its own. It costs O(bytes), one small map per line.
func ReadBudgets(r io.Reader, file string) (budgets []Budget, lines []int, ps Problems) {
	return readBudgets(nil, nil, r, file)
}

// readBudgets is ReadBudgets appending to budgets and lines.
func readBudgets(budgets []Budget, lines []int, r io.Reader, file string) ([]Budget, []int, Problems) {
	var ps Problems
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxBudgetLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		b, p := parseBudgetLine(line)
		for i := range p {
			p[i].File, p[i].Line = file, n
		}
		if len(p) > 0 {
			ps = append(ps, p...)
			continue
		}
		budgets = append(budgets, b)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		reason := "cannot read: " + err.Error()
		if errors.Is(err, bufio.ErrTooLong) {
			reason = fmt.Sprintf("line longer than %d bytes", MaxBudgetLine)
		}
		ps = append(ps, Problem{File: file, Line: n + 1, Reason: reason})
	}
	return budgets, lines, ps
}

// parseBudgetLine decodes one line; problems carry the field's name as
// Path and no line. A line of valid UTF-8 that is a valid JSON object
// is walked in place (gjson: no map, no second decode of each field, a
// few hundred nanoseconds a line, which a million-budget file needs);
// any other line goes through encoding/json, whose error names what is
// wrong.
func parseBudgetLine(line []byte) (Budget, Problems) {
	if !utf8.Valid(line) || !gjson.ValidBytes(line) {
		return parseBudgetLineSlow(line)
	}
	obj := gjson.ParseBytes(line)
	if !obj.IsObject() {
		return parseBudgetLineSlow(line)
	}
	// As in a map, a key given twice counts with its last value.
	var vals [len(budgetKeys)]gjson.Result
	var unknown []string
	obj.ForEach(func(k, v gjson.Result) bool {
		if i, ok := budgetKeyIndex[k.Str]; ok {
			vals[i] = v
		} else if !slices.Contains(unknown, k.Str) {
			unknown = append(unknown, k.Str)
		}
		return true
	})
	var ps Problems
	var str [len(budgetKeys)]string
	var b Budget
	for i, v := range vals {
		key := budgetKeys[i]
		switch {
		case !v.Exists() || v.Type == gjson.Null:
		case i == keyTarget:
			f, err := strconv.ParseFloat(v.Raw, 64)
			if v.Type != gjson.Number || err != nil {
				ps = append(ps, Problem{Path: key, Reason: "want a number, got " + v.Raw})
			}
			b.Target = f
		case i == keyScored:
			if v.Type != gjson.True && v.Type != gjson.False {
				ps = append(ps, Problem{Path: key, Reason: "want true or false, got " + v.Raw})
			}
			b.Scored = v.Type == gjson.True
		case v.Type != gjson.String:
			ps = append(ps, Problem{Path: key, Reason: "want a string, got " + v.Raw})
		default:
			// A copy: gjson's string is a part of the line's, which
			// would stay in memory as long as the budget.
			str[i] = strings.Clone(v.Str)
		}
	}
	return budgetOf(b, str, unknown, ps)
}

// budgetKeyIndex is the index of each of budgetKeys.
var budgetKeyIndex = func() map[string]int {
	m := make(map[string]int, len(budgetKeys))
	for i, k := range budgetKeys {
		m[k] = i
	}
	return m
}()

// parseBudgetLineSlow is parseBudgetLine through encoding/json: a map of
// the line's fields, then each field decoded into its type.
func parseBudgetLineSlow(line []byte) (Budget, Problems) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Budget{}, Problems{{Reason: "want one JSON object, got " + jsonProblem(err)}}
	}
	var b Budget
	var ps Problems
	var str [len(budgetKeys)]string
	for i, k := range budgetKeys {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			continue
		}
		var dst any = &str[i]
		switch i {
		case keyTarget:
			dst = &b.Target
		case keyScored:
			dst = &b.Scored
		}
		if err := json.Unmarshal(v, dst); err != nil {
			ps = append(ps, Problem{Path: k, Reason: "want " + jsonKind(dst) + ", got " + string(v)})
		}
	}
	var unknown []string
	for k := range raw {
		if _, ok := budgetKeyIndex[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	return budgetOf(b, str, unknown, ps)
}

// budgetOf completes b with a line's string fields (str, in the order of
// budgetKeys), parsing its times and durations, and adds a problem for
// each of the line's unknown fields.
func budgetOf(b Budget, str [len(budgetKeys)]string, unknown []string, ps Problems) (Budget, Problems) {
	b.Name, b.Parent = str[keyName], str[keyParent]
	b.Kind, b.Action = Kind(str[keyKind]), Action(str[keyAction])
	rfc3339 := func(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
	parseText(&ps, budgetKeys[keyBegin], str[keyBegin], &b.Begin, rfc3339, timeType)
	parseText(&ps, budgetKeys[keyEnd], str[keyEnd], &b.End, rfc3339, timeType)
	parseText(&ps, budgetKeys[keyReserve], str[keyReserve], &b.Reserve, time.ParseDuration, durationType)
	parseText(&ps, budgetKeys[keyPeriod], str[keyPeriod], &b.Period, time.ParseDuration, durationType)
	slices.Sort(unknown)
	for _, k := range unknown {
		ps = append(ps, Problem{Path: k, Reason: "unknown field (want " + strings.Join(budgetKeys[:], ", ") + ")"})
	}
	return b, ps
}

// parseText sets *dst to parse(s) unless s is empty; a value that does
// not parse is a problem of field key, wanting a value of type want.
func parseText[T any](ps *Problems, key, s string, dst *T, parse func(string) (T, error), want reflect.Type) {
	if s == "" {
		return
	}
	v, err := parse(s)
	if err != nil {
		*ps = append(*ps, Problem{Path: key, Reason: fmt.Sprintf("want %s, got %q", describe(want), s)})
	}
	*dst = v
}

// jsonKind names what a field of a budget line holds.
func jsonKind(dst any) string {
	switch dst.(type) {
	case *float64:
		return "a number"
	case *bool:
		return "true or false"
	}
	return "a string"
}

// jsonProblem describes a line that is not a JSON object.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "a JSON " + te.Value
	}
	return "invalid JSON (" + strings.TrimPrefix(err.Error(), "json: ") + ")"
}

// fileBudgets says which of a Config's budgets came from its budgets file:
// Budgets[first:], budget first+i from line lines[i] of path.
type fileBudgets struct {
	path  string
	first int
	lines []int
}

// of returns the file and line of budget i, if it came from the file.
func (f *fileBudgets) of(i int) (string, int, bool) {
	if f == nil || i < f.first || i-f.first >= len(f.lines) {
		return "", 0, false
	}
	return f.path, f.lines[i-f.first], true
}

// readBudgetsFile appends the budgets of c.BudgetsFile (relative to dir
// when not absolute) to c.Budgets: those of the lines that decode.
// Problems name the file and line, or budgets_file when it cannot be
// opened.
func (c *Config) readBudgetsFile(dir string) Problems {
	path := c.BudgetsFile
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return Problems{{Path: "budgets_file", Reason: "cannot read: " + err.Error(), Line: c.lines["budgets_file"]}}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return Problems{{Path: "budgets_file", Reason: path + " is not a regular file", Line: c.lines["budgets_file"]}}
	}
	// The lines that decode are kept (and validated), those that do not
	// are the problems. The budgets are read into a slice of the file's
	// line count: a million budgets are then held once while they are
	// read, not in the copies a growing slice leaves behind.
	n, err := countLines(f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return Problems{{Path: "budgets_file", Reason: "cannot read: " + err.Error(), Line: c.lines["budgets_file"]}}
	}
	first := len(c.Budgets)
	bs := append(make([]Budget, 0, first+n), c.Budgets...)
	bs, lines, ps := readBudgets(bs, make([]int, 0, n), f, c.BudgetsFile)
	c.file = &fileBudgets{path: c.BudgetsFile, first: first, lines: lines}
	c.Budgets = bs
	return ps
}

// countLines counts the lines of r (a last line without a newline
// included).
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
