package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// budgetKeys is the set of YAML keys of Budget, read from its tags.
var budgetKeys = func() map[string]bool {
	keys := make(map[string]bool)
	t := reflect.TypeOf(Budget{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// UnmarshalYAML decodes a budget strictly, like the rest of the file, and
// accepts begin and end only as RFC 3339 times: YAML's own timestamps would
// also take a bare date, or a time without a zone read as UTC.
//
// yaml.v3 does not pass its KnownFields setting on to custom unmarshalers,
// so unknown keys are checked here; errors are returned as a
// *yaml.TypeError so that decoding goes on and reports every problem.
func (b *Budget) UnmarshalYAML(n *yaml.Node) error {
	type plain Budget // without this method
	if n.Kind != yaml.MappingNode {
		return n.Decode((*plain)(b))
	}
	var errs []string
	keep := *n
	keep.Content = make([]*yaml.Node, 0, len(n.Content))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !budgetKeys[k.Value] {
			errs = append(errs, fmt.Sprintf("line %d: field %s not found in type config.Budget", k.Line, k.Value))
			continue
		}
		if (k.Value == "begin" || k.Value == "end") && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			if _, err := time.Parse(time.RFC3339Nano, v.Value); err != nil {
				errs = append(errs, fmt.Sprintf("line %d: cannot unmarshal !!str `%s` into time.Time", v.Line, v.Value))
				continue
			}
		}
		keep.Content = append(keep.Content, k, v)
	}
	if err := keep.Decode((*plain)(b)); err != nil {
		te, ok := err.(*yaml.TypeError)
		if !ok {
			return err
		}
		errs = append(errs, te.Errors...)
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}
