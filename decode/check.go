package decode

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// check validates the shape of a value and returns "" when it is a JSON
// object within the size and depth limits.
func (d *Decoder) check(value []byte) Reason {
	if isBlank(value) {
		return ReasonEmptyValue
	}
	if len(value) > d.cfg.maxBytes {
		return ReasonTooLarge
	}
	if !utf8.Valid(value) {
		return ReasonInvalidUTF8
	}
	depth, open := scanDepth(value, d.cfg.maxDepth)
	if depth > d.cfg.maxDepth {
		return ReasonTooDeep
	}
	if !gjson.ValidBytes(value) {
		if open {
			return ReasonTruncated
		}
		return ReasonNotJSON
	}
	for _, c := range value {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			if c != '{' {
				return ReasonNotObject
			}
			break
		}
	}
	return ""
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// scanDepth returns the deepest nesting of value, stopping early once it
// exceeds limit, and whether the text ends inside a string or an
// unclosed object or array (the mark of a truncated record).
func scanDepth(value []byte, limit int) (maxDepth int, open bool) {
	depth := 0
	inString := false
	for i := 0; i < len(value); i++ {
		c := value[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
				if maxDepth > limit {
					return maxDepth, true
				}
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return maxDepth, false
			}
		}
	}
	return maxDepth, inString || depth > 0
}
