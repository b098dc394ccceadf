package config

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file checks a YAML tree against the schema (the yaml tags of
// Config) before it is decoded, and says what is wrong in the words of the
// schema, with the field path and line of each problem. It reads the tree
// (node kinds, tags, values, positions), never the wording of yaml's error
// messages: a scalar is checked by decoding that one node into its field's
// type, which either works or does not.
//
// The check also makes the tree decodable, so that validation can go on in
// the same pass: a value of the wrong type becomes null (its field keeps
// its zero value), a repeated key is dropped (the first one counts), and an
// unknown key is left for the decoder to ignore. Validation problems that
// only restate one of these (a zero value where the wrong type was, the
// field a misspelt key meant) are then left out: see explains.

var (
	timeType     = reflect.TypeOf(time.Time{})
	durationType = reflect.TypeOf(time.Duration(0))
	budgetType   = reflect.TypeOf(Budget{})
)

// schemaCheck walks a YAML tree beside the Go type it decodes into.
type schemaCheck struct {
	problems Problems
	// explained are the paths whose validation problems would restate a
	// problem found: values of the wrong type (now null) and the fields
	// that misspelt keys were taken for.
	explained []string
}

func (s *schemaCheck) add(path, reason string, line int) {
	s.problems = append(s.problems, Problem{Path: path, Reason: reason, Line: line})
}

// wrongType reports that n, at path, is not what its field wants and
// turns n into null, so that the tree decodes with the field at its zero
// value.
func (s *schemaCheck) wrongType(n *yaml.Node, path, want string) {
	s.add(path, "want "+want+", got "+got(n), n.Line)
	s.explained = append(s.explained, path)
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}

// explains reports whether a validation problem at path only restates a
// problem the check found: it is at or under a value of the wrong type, or
// at or under the field that a misspelt key meant.
func (s *schemaCheck) explains(path string) bool {
	for _, p := range s.explained {
		if within(path, p) {
			return true
		}
	}
	return false
}

// within reports whether path is p or a path under it ("" is the root).
func within(path, p string) bool {
	if p == "" || path == p {
		return true
	}
	return strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[')
}

// check checks n, at path, against t; in is the struct type holding the
// field (nil at the root and for list items).
func (s *schemaCheck) check(n *yaml.Node, t reflect.Type, path string, in reflect.Type) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			s.check(c, t, path, in)
		}
		return
	}
	if n.Tag == "!!null" {
		return // the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		s.time(n, path, in == budgetType)
	case t == durationType || t.Kind() != reflect.Struct && t.Kind() != reflect.Slice:
		s.scalar(n, t, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			s.wrongType(n, path, "a list")
			return
		}
		for i, c := range n.Content {
			s.check(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", nil)
		}
	default:
		s.mapping(n, t, path)
	}
}

// mapping checks the keys of a mapping against the fields of struct t.
func (s *schemaCheck) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		s.wrongType(n, path, "a mapping")
		return
	}
	seen := make(map[string]int, len(n.Content)/2)
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			s.add(p, "duplicate key (first at line "+strconv.Itoa(first)+")", k.Line)
			continue // dropped: the decoder refuses repeated keys
		}
		seen[k.Value] = k.Line
		kept = append(kept, k, v)
		f, ok := fieldByKey(t, k.Value)
		if !ok {
			reason := "unknown field"
			if why, gone := removedFields[p]; gone {
				reason = why
			} else if m := suggest(k.Value, t); m != "" {
				reason += "; did you mean `" + m + "`?"
				s.explained = append(s.explained, join(path, m))
			}
			s.add(p, reason, k.Line)
			continue
		}
		s.check(v, f.Type, p, t)
	}
	n.Content = kept
}

// join returns the path of field key under path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldByKey returns the field of struct t whose yaml key is key,
// looking into inlined structs (`yaml:",inline"`) as yaml does.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	index, ok := fieldIndex(t, key)
	if !ok {
		return reflect.StructField{}, false
	}
	return t.FieldByIndex(index), true
}

// fieldIndex returns the index sequence (reflect.Type.FieldByIndex) of
// the field of struct t whose yaml key is key.
func fieldIndex(t reflect.Type, key string) ([]int, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() {
			continue
		}
		if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			if sub, ok := fieldIndex(f.Type, key); ok {
				return append([]int{i}, sub...), true
			}
			continue
		}
		if name == key {
			return []int{i}, true
		}
	}
	return nil, false
}

// scalar checks that n decodes into a value of type t.
func (s *schemaCheck) scalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode || n.Decode(reflect.New(t).Interface()) != nil {
		s.wrongType(n, path, describe(t))
	}
}

// time checks a time; strict ones (a budget's begin and end) must be RFC
// 3339: YAML's own timestamps would also take a bare date, or a time
// without a zone read as UTC.
func (s *schemaCheck) time(n *yaml.Node, path string, strict bool) {
	var t time.Time
	bad := n.Kind != yaml.ScalarNode || n.Decode(&t) != nil
	if !bad && strict {
		_, err := time.Parse(time.RFC3339Nano, n.Value)
		bad = err != nil
	}
	if bad {
		s.wrongType(n, path, describe(timeType))
	}
}

// describe names a Go type the way the schema means it.
func describe(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 1s or 100ms"
	case t == timeType:
		return "an RFC 3339 time such as 2026-11-22T10:00:00Z"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	}
	return "a mapping"
}

// got describes the value yaml found.
func got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return strconv.Quote(n.Value)
}

// linesByPath returns path -> line for every field of root.
func linesByPath(root *yaml.Node) map[string]int {
	lines := make(map[string]int)
	if root != nil {
		walk(root, "", func(path string, line int) {
			if _, ok := lines[path]; !ok {
				lines[path] = line
			}
		})
	}
	return lines
}

// walk calls fn for every mapping value and sequence item under n, parents
// before children, with its path and the line of its key (or item).
func walk(n *yaml.Node, path string, fn func(path string, line int)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, path, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			fn(p, k.Line)
			walk(v, p, fn)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			fn(p, c.Line)
			walk(c, p, fn)
		}
	}
}

// removedFields are the fields older files may still set, with what the
// problem says instead of "unknown field".
var removedFields = map[string]string{
	"topics.checkpoints": "removed: the checkpoint topic is no longer read, each partition's counters are its ledger on the stats topic; " +
		"delete this line (CHANGELOG.md says how to upgrade a deployment that still has one)",
}
