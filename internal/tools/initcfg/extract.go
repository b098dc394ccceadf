package initcfg

import (
	"time"

	"github.com/tidwall/gjson"
)

// Record is one record sampled from the topic.
type Record struct {
	Key, Value []byte
	Timestamp  time.Time
	Partition  int32
	Offset     int64
}

// Kind is the type of a value at a path, as the worker's decoder reads
// it: Avro and Protobuf values read as JSON's (a timestamp as Unix
// milliseconds, an enum as its name).
type Kind uint8

// Kinds of values.
const (
	Null Kind = iota
	String
	Number
	Bool
	Nested // an object or a list: no single value
)

func (k Kind) String() string {
	return [...]string{"null", "string", "number", "boolean", "nested"}[k]
}

// Value is the value at a path in one event.
type Value struct {
	Kind Kind
	Text string  // a string's text, a number's or a boolean's literal
	Num  float64 // a number's value
}

// Field is a path and its value in one event.
type Field struct {
	Path  string
	Value Value
}

// Event is a record read in its format: its fields (leaves only), its key
// and its timestamp.
type Event struct {
	Key    string
	Time   time.Time
	Fields []Field
}

// valueOf converts what gjson (and the decoder, which answers as gjson
// does) reads.
func valueOf(r gjson.Result) Value {
	switch r.Type {
	case gjson.String:
		return Value{Kind: String, Text: r.Str}
	case gjson.Number:
		text := r.Raw
		if text == "" {
			text = gjson.Result{Type: gjson.Number, Num: r.Num}.String()
		}
		return Value{Kind: Number, Text: text, Num: r.Num}
	case gjson.True, gjson.False:
		return Value{Kind: Bool, Text: r.Raw}
	case gjson.JSON:
		return Value{Kind: Nested}
	}
	return Value{}
}

// Bounds of the JSON walk: deeper fields and fields past the count are
// not listed.
const (
	maxDepth = 16
	maxPaths = 256
)

// jsonEvent reads a JSON object's leaves; ok is false when the value is
// not a JSON object. Keys that a field path cannot name (with a dot or
// other characters outside letters, digits, '_' and '-', or all digits)
// are skipped and counted.
func jsonEvent(r Record) (e Event, skipped int, ok bool) {
	if !gjson.ValidBytes(r.Value) {
		return e, 0, false
	}
	root := gjson.ParseBytes(r.Value)
	if !root.IsObject() {
		return e, 0, false
	}
	e = Event{Key: string(r.Key), Time: r.Timestamp}
	var walk func(obj gjson.Result, prefix string, depth int)
	walk = func(obj gjson.Result, prefix string, depth int) {
		obj.ForEach(func(k, v gjson.Result) bool {
			if !simpleKey(k.Str) {
				skipped++
				return true
			}
			p := k.Str
			if prefix != "" {
				p = prefix + "." + p
			}
			switch {
			case len(e.Fields) >= maxPaths:
				return false
			case v.IsObject() && depth < maxDepth:
				walk(v, p, depth+1)
			default:
				e.Fields = append(e.Fields, Field{Path: p, Value: valueOf(v)})
			}
			return true
		})
	}
	walk(root, "", 1)
	return e, skipped, true
}

// simpleKey reports whether a field path can name key: letters, digits,
// '_' and '-', not all digits (the decoder's simple paths).
func simpleKey(k string) bool {
	digits := true
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
			digits = false
		default:
			return false
		}
	}
	return k != "" && !digits
}
