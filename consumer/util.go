package consumer

import (
	"fmt"
	"unsafe"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// bytesOf returns the bytes of s without copying. The result must never be
// written to: it is used for header values, which kgo only reads.
func bytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// stringOf returns b as a string without copying. The string is valid only
// while b is not modified; record values are never modified after a fetch.
func stringOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
