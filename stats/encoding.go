package stats

import (
	"encoding/binary"
	"math"
	"time"
)

// Encodings shared by every record kind of the stats topic (kinds.go,
// ledger_encoding.go, workerstatus.go):
//
//	u16     a name in a key: uint16 big-endian length (1 to MaxNameLen),
//	        then the bytes; any bytes are allowed, and the length prefix
//	        makes every key canonical (one identity, one key), which
//	        compaction needs
//	time    seconds since the Unix epoch, zig-zag varint; then
//	        nanoseconds 0..999999999, uvarint. Any time.Time round-trips
//	        exactly (the zero value too), decoded in UTC without a
//	        monotonic reading
//	float64 8 bytes, IEEE-754 binary64, little-endian
//	str     in a value: uvarint length, then the bytes
//
// Values start with a major and a minor version byte. A decoder rejects
// another major (ErrUnknownVersion) and skips bytes that follow the known
// fields of a newer minor; in a minor it knows, trailing bytes are
// corrupt (ErrCorrupt). A nil value is a tombstone.

const (
	nanosPerSec  = 1_000_000_000
	float64Bytes = 8
)

// MaxNameLen is the longest name, in bytes, a key can hold (a budget,
// source, layer, experiment or variant name).
const MaxNameLen = math.MaxUint16

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}
