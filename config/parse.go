package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

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
// validates the result. Any problem is returned as Problems, with the line
// of each: syntax errors and fields of the wrong type or unknown to the
// schema first, then the budgets file's lines that do not decode
// (validation is skipped when the YAML or the budgets file does not
// decode), or else every validation problem.
func Parse(data []byte) (*Config, error) { return parse(data, "") }

// parse is Parse, reading a relative budgets_file from dir.
func parse(data []byte, dir string) (*Config, error) {
	c := new(Config)
	root, ps := decode(data, c)
	if len(ps) > 0 {
		return nil, ps
	}
	c.lines = linesByPath(root)
	if c.BudgetsFile != "" {
		if ps := c.readBudgetsFile(dir); len(ps) > 0 {
			return nil, ps
		}
	}
	c.defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decode reads data into c, returning the YAML tree (nil for an empty
// document) and the problems met.
func decode(data []byte, c *Config) (root *yaml.Node, ps Problems) {
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
		return nil, nil // empty file: the validation reports what is missing
	case err != nil:
		return nil, Problems{syntaxProblem(err)}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, Problems{syntaxProblem(err)}
		}
		return nil, Problems{{Reason: "more than one YAML document (remove the second ---)", Line: next.Line}}
	}
	var sc schemaCheck
	sc.check(&doc, reflect.TypeOf(c).Elem(), "", nil)
	if len(sc.problems) > 0 {
		return nil, sc.problems
	}
	if err := doc.Decode(c); err != nil { // the check above should leave nothing
		return nil, Problems{{Reason: "YAML: " + err.Error()}}
	}
	return &doc, nil
}

// syntaxProblem is a YAML syntax error. Its message is the parser's, with
// the line in its words: the parser gives no position otherwise.
func syntaxProblem(err error) Problem {
	return Problem{Reason: "YAML syntax: " + err.Error()}
}
