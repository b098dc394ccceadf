// Package clip bounds the values a log line or an error message takes
// from a record (a key, a budget name, a field's text, a decode error
// that quotes them): the first Max bytes and the length of the whole, so
// that no record, however long, makes a long line. Names and errors
// that come from the configuration need no clipping.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of a value String and Bytes keep.
const Max = 256

// String returns s when it has at most Max bytes, else its first Max
// bytes (cut at a UTF-8 boundary) followed by "…(N bytes)", N the length
// of s.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	return s[:cut(s[:Max+1])] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Bytes is String of b's bytes; it copies at most Max of them.
func Bytes(b []byte) string {
	if len(b) <= Max {
		return string(b)
	}
	head := string(b[:Max+1])
	return head[:cut(head)] + "…(" + strconv.Itoa(len(b)) + " bytes)"
}

// cut returns where to cut s (Max+1 bytes) so that at most Max bytes stay
// and no UTF-8 sequence is split.
func cut(s string) int {
	n := Max
	for n > Max-utf8.UTFMax && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Error returns err's message clipped by String ("" for nil).
func Error(err error) string {
	if err == nil {
		return ""
	}
	return String(err.Error())
}
