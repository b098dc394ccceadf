package config

import (
	"reflect"
	"strconv"
	"strings"
)

// A problem with a field that the YAML file does not set, and that has no
// default, is about a value the user never wrote: it says that the field
// is required, rather than quoting the zero value it found ("got 0").
// Validate words it so for a parsed config (see checker.add).

// unset reports whether path names a single-valued field (not a list or
// a mapping, whose problems say what they must hold) of a parsed config
// that its file does not set and that holds its zero value after the
// defaults. It is false for a Config built in code (no lines to tell).
func (v *checker) unset(path string) bool {
	if v.lines == nil || v.cfg == nil || path == "" {
		return false
	}
	if _, set := v.lines[path]; set {
		return false
	}
	val, ok := valueAt(reflect.ValueOf(v.cfg).Elem(), path)
	if !ok || val.Kind() == reflect.Slice || val.Kind() == reflect.Struct && val.Type() != timeType {
		return false
	}
	return val.IsZero()
}

// required rewords a problem with an unset field: "is required", followed
// by the rule the value must meet, without the zero value it quoted
// ("must be set with x" becomes "is required with x").
func required(reason string) string {
	if i := strings.LastIndex(reason, ", got "); i >= 0 {
		reason = reason[:i]
	}
	if rest, ok := strings.CutPrefix(reason, "must be set"); ok { // "… with tls.cert_file"
		return "is required" + rest
	}
	switch reason {
	case "must not be empty", "must name a topic":
		return "is required"
	}
	return "is required (" + reason + ")"
}

// valueAt returns the value at a field path ("layers[0].experiments[1].
// allocation") under v, following yaml keys and list indexes; ok is false
// when the path does not lead to a value (an index out of range, a nil
// pointer, an unknown key).
func valueAt(v reflect.Value, path string) (reflect.Value, bool) {
	for path != "" {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if strings.HasPrefix(path, "[") {
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil || v.Kind() != reflect.Slice || i < 0 || i >= v.Len() {
				return reflect.Value{}, false
			}
			v, path = v.Index(i), strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		key := path
		if i := strings.IndexAny(path, ".["); i >= 0 {
			key, path = path[:i], strings.TrimPrefix(path[i:], ".")
		} else {
			path = ""
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		index, ok := fieldIndex(v.Type(), key)
		if !ok {
			return reflect.Value{}, false
		}
		v = v.FieldByIndex(index)
	}
	return v, true
}
