package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Load reads, parses and validates the config file at path (see Parse).
// A file that cannot be read gives an error that does not wrap ErrInvalid.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes one YAML document strictly, reads its budgets_file (a
// relative path from the working directory), applies the defaults and
// validates the result. Every problem is returned at once, as Problems,
// each with its path and line, in the order of the file's lines (then the
// budgets file's): fields of the wrong type, unknown to the schema (with
// the field a misspelling likely meant) or repeated, the budgets file's
// lines that do not decode, and every validation problem of the rest. A
// field the file does not set, where a value is needed, is reported as
// required. Only a YAML syntax error stops the check at that error.
func Parse(data []byte) (*Config, error) { return parse(data, "") }

// parse is Parse, reading a relative budgets_file from dir.
func parse(data []byte, dir string) (*Config, error) {
	c := new(Config)
	root, sc, ps := decode(data, c)
	if len(ps) > 0 {
		return nil, ps
	}
	c.lines = linesByPath(root)
	ps = sc.problems
	if c.BudgetsFile != "" {
		fps := c.readBudgetsFile(dir)
		if len(fps) == 1 && fps[0].Path == "budgets_file" { // unreadable: its budgets are not missing
			sc.explained = append(sc.explained, "budgets")
		}
		ps = append(ps, fps...)
	}
	c.defaults()
	var vs Problems
	if errors.As(c.Validate(), &vs) {
		for _, p := range vs {
			if p.File != "" || !sc.explains(p.Path) {
				ps = append(ps, p)
			}
		}
	}
	if len(ps) > 0 {
		sortByLine(ps)
		return nil, ps
	}
	return c, nil
}

// sortByLine orders problems by line: those of the YAML first (a problem
// without a line first of all), then those of the budgets file.
func sortByLine(ps Problems) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if (a.File != "") != (b.File != "") {
			if a.File == "" {
				return -1
			}
			return 1
		}
		return a.Line - b.Line
	})
}

// decode reads data into c, returning the YAML tree (nil for an empty
// document) and the schema check's findings; ps holds a problem that
// stops the parse (YAML syntax, more than one document).
func decode(data []byte, c *Config) (root *yaml.Node, sc *schemaCheck, ps Problems) {
	sc = new(schemaCheck)
	// Turn a panic of the YAML decoder on hostile input into a problem
	// rather than a crash of the caller.
	defer func() {
		if r := recover(); r != nil {
			root, ps = nil, Problems{{Reason: fmt.Sprintf("YAML decoder failed: %v", r)}}
		}
	}()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, sc, nil // empty file: the validation reports what is missing
	case err != nil:
		return nil, sc, Problems{syntaxProblem(err)}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, sc, Problems{syntaxProblem(err)}
		}
		return nil, sc, Problems{{Reason: "more than one YAML document (remove the second ---)", Line: next.Line}}
	}
	sc.check(&doc, reflect.TypeOf(c).Elem(), "", nil)
	if err := doc.Decode(c); err != nil { // the check leaves a tree that decodes
		return nil, sc, Problems{{Reason: "YAML: " + err.Error()}}
	}
	return &doc, sc, nil
}

// syntaxProblem is a YAML syntax error. Its message is the parser's, with
// the line in its words: the parser gives no position otherwise.
func syntaxProblem(err error) Problem {
	return Problem{Reason: "YAML syntax: " + err.Error()}
}
