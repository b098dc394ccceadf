package config

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file turns yaml.v3's error messages into Problems with the path and
// line of the field, and in the words of the schema rather than of Go.

var (
	lineRE       = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE    = regexp.MustCompile(`^field (.+) not found in type \S+$`)
	unmarshalRE  = regexp.MustCompile("(?s)^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
	alreadyDefRE = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	alreadySetRE = regexp.MustCompile(`^field (.+) already set in type \S+$`)
)

// syntaxProblem converts a YAML syntax error.
func syntaxProblem(err error) Problem {
	msg := err.Error()
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Reason: "YAML syntax: " + m[2], Line: line}
	}
	return Problem{Reason: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

// problem converts one message of a yaml.TypeError.
func (idx *lineIndex) problem(msg string) Problem {
	m := lineRE.FindStringSubmatch(msg)
	if m == nil {
		return Problem{Reason: msg}
	}
	line, _ := strconv.Atoi(m[1])
	msg = m[2]
	if u := unknownRE.FindStringSubmatch(msg); u != nil {
		path := idx.key(line, u[1])
		if path == "" {
			return Problem{Reason: "unknown field " + strconv.Quote(u[1]), Line: line}
		}
		return Problem{Path: path, Reason: "unknown field", Line: line}
	}
	if u := unmarshalRE.FindStringSubmatch(msg); u != nil {
		return Problem{Path: idx.value(line, u[2]), Line: line,
			Reason: "want " + describe(u[3]) + ", got " + got(u[1], u[2])}
	}
	if u := alreadyDefRE.FindStringSubmatch(msg); u != nil {
		return Problem{Path: idx.key(line, u[1]), Line: line, Reason: "duplicate key (first at line " + u[2] + ")"}
	}
	if u := alreadySetRE.FindStringSubmatch(msg); u != nil {
		return Problem{Path: idx.key(line, u[1]), Line: line, Reason: "duplicate key"}
	}
	return Problem{Path: idx.value(line, ""), Reason: msg, Line: line}
}

// describe names a Go type the way the schema means it.
func describe(goType string) string {
	switch goType {
	case "float64":
		return "a number"
	case "int32", "int", "int64":
		return "an integer"
	case "bool":
		return "true or false"
	case "string", "config.Delivery", "config.Kind":
		return "a string"
	case "time.Duration":
		return "a duration such as 1s or 100ms"
	case "time.Time":
		return "an RFC 3339 time such as 2026-11-22T10:00:00Z"
	}
	if strings.HasPrefix(goType, "[]") {
		return "a list"
	}
	return "a mapping"
}

// got describes the value yaml found, by its resolved tag.
func got(tag, value string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "null":
		return "nothing"
	}
	return strconv.Quote(value)
}

// lineIndex finds the fields of a YAML tree by line.
type lineIndex struct {
	byLine map[int][]entry // by the line of the key and of the value
}

type entry struct {
	path  string
	key   string // the mapping key, "" for a sequence item
	value *yaml.Node
	line  int // of the key, or of the item
}

func newLineIndex(root *yaml.Node) *lineIndex {
	idx := &lineIndex{byLine: make(map[int][]entry)}
	if root != nil {
		walk(root, "", func(e entry) {
			idx.byLine[e.line] = append(idx.byLine[e.line], e)
			if e.value.Line != e.line {
				idx.byLine[e.value.Line] = append(idx.byLine[e.value.Line], e)
			}
		})
	}
	return idx
}

// linesByPath returns path -> line for every field of root.
func linesByPath(root *yaml.Node) map[string]int {
	lines := make(map[string]int)
	if root != nil {
		walk(root, "", func(e entry) {
			if _, ok := lines[e.path]; !ok {
				lines[e.path] = e.line
			}
		})
	}
	return lines
}

// walk calls fn for every mapping value and sequence item under n, parents
// before children.
func walk(n *yaml.Node, path string, fn func(entry)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, path, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			fn(entry{path: p, key: k.Value, value: v, line: k.Line})
			walk(v, p, fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			fn(entry{path: p, value: c, line: c.Line})
			walk(c, p, fn)
		}
	}
}

// key returns the path of the mapping key named key on line, or "".
func (idx *lineIndex) key(line int, key string) string {
	for _, e := range idx.byLine[line] {
		if e.key == key && e.line == line {
			return e.path
		}
	}
	return ""
}

// value returns the path of the field whose scalar value on line is text,
// else of the deepest field on line, else "".
func (idx *lineIndex) value(line int, text string) string {
	var best string
	for _, e := range idx.byLine[line] {
		if text != "" && e.value.Line == line && e.value.Kind == yaml.ScalarNode && e.value.Value == text {
			return e.path
		}
		if len(e.path) > len(best) {
			best = e.path
		}
	}
	return best
}
