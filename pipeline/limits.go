package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/throttler/throttler/decode"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyAndHeadersSize returns the bytes of r's key and headers.
func keyAndHeadersSize(r *kgo.Record) int {
	n := len(r.Key)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// deadLetterKeep is what fitDeadLetter keeps of a large key.
const deadLetterKeep = 1 << 10

// FitDeadLetter makes a dead letter fit in a record of the dead-letter
// topic: when its value is over maxValue bytes, or its key and headers
// over decode.MaxKeyAndHeaderBytes, it cuts the value to maxValue bytes and the
// key to 1 KiB, keeps of the source record's own headers (the first
// srcHeaders) those that fit, in order, in half of decode.MaxKeyAndHeaderBytes,
// and notes the source value's size in HeaderOriginalSize. The whole
// record stays at its source position, which the dead letter names.
func FitDeadLetter(out *kgo.Record, srcHeaders, maxValue int) {
	if len(out.Value) <= maxValue && keyAndHeadersSize(out) <= decode.MaxKeyAndHeaderBytes+deadLetterKeep {
		return
	}
	size := len(out.Value)
	if len(out.Value) > maxValue {
		out.Value = out.Value[:maxValue]
	}
	if len(out.Key) > deadLetterKeep {
		out.Key = out.Key[:deadLetterKeep]
	}
	if keyAndHeadersSize(out) > decode.MaxKeyAndHeaderBytes && srcHeaders <= len(out.Headers) {
		kept, room := 0, decode.MaxKeyAndHeaderBytes/2
		for _, h := range out.Headers[:srcHeaders] {
			if n := len(h.Key) + len(h.Value); n <= room {
				room -= n
				out.Headers[kept] = h
				kept++
			}
		}
		out.Headers = append(out.Headers[:kept], out.Headers[srcHeaders:]...)
	}
	out.Headers = append(out.Headers, kgo.RecordHeader{Key: HeaderOriginalSize, Value: strconv.AppendInt(nil, int64(size), 10)})
}

// MaxStateKeyBytes is the longest cap key or dedup id kept as it is. A
// partition keeps every cap key for its cap's period (and writes it to
// the caps changelog) and the last dedup_window ids: a longer one is
// kept as its SHA-256 digest instead (StateKey), so that memory follows
// the number of keys, not what the events carry (up to the record size,
// about 1 MB, each). Hashed, not dead-lettered: the event is good, and
// two keys share a digest with a chance of 2^-128.
const MaxStateKeyBytes = 256

// hashedKeyPrefix starts a hashed key: "#sha256:" and 64 hex digits.
const hashedKeyPrefix = "#sha256:"

// StateKey returns k when it has at most MaxStateKeyBytes bytes, else
// "#sha256:" followed by the hex SHA-256 digest of k (72 bytes), in new
// memory.
func StateKey(k []byte) []byte {
	if len(k) <= MaxStateKeyBytes {
		return k
	}
	sum := sha256.Sum256(k)
	out := make([]byte, len(hashedKeyPrefix), len(hashedKeyPrefix)+hex.EncodedLen(len(sum)))
	copy(out, hashedKeyPrefix)
	return hex.AppendEncode(out, sum[:])
}
