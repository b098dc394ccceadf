// Package bytesconv converts between strings and byte slices without
// copying, for the record path, which reads record values as strings and
// writes strings as header values.
package bytesconv

import "unsafe"

// Bytes returns the bytes of s without copying. The result must never be
// written to: it is used for header values, which kgo only reads.
func Bytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// String returns b as a string without copying. The string is valid only
// while b is not modified; record values are never modified after a fetch.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
