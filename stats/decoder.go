package stats

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/throttler/throttler/flow"
)

// decoder reads the encodings of this package. The first failure sticks: every
// later read returns zero values, and err holds a *DecodeError.
type decoder struct {
	what string
	b    []byte
	pos  int
	err  error
}

func (d *decoder) fail(pos int, sentinel error, format string, args ...any) error {
	if d.err == nil {
		d.err = &DecodeError{What: d.what, Pos: pos, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
	}
	return d.err
}

func (d *decoder) rest() int { return len(d.b) - d.pos }

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.rest() < 1 {
		d.fail(d.pos, ErrCorrupt, "truncated")
		return 0
	}
	v := d.b[d.pos]
	d.pos++
	return v
}

// version reads a major and minor version byte, failing on another major.
func (d *decoder) version(major byte) (minor byte) {
	if d.rest() == 0 && d.err == nil {
		d.fail(0, ErrCorrupt, "empty")
		return 0
	}
	if v := d.byte(); d.err == nil && v != major {
		d.fail(0, ErrUnknownVersion, "major version %d, want %d", v, major)
		return 0
	}
	return d.byte()
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.rest() {
		d.fail(d.pos, ErrCorrupt, "length %d exceeds the %d bytes left", n, d.rest())
		return nil
	}
	v := d.b[d.pos : d.pos+n]
	d.pos += n
	return v
}

// name16 reads a uint16-length-prefixed, non-empty name.
func (d *decoder) name16(field string) string {
	if d.err != nil {
		return ""
	}
	if d.rest() < 2 {
		d.fail(d.pos, ErrCorrupt, "truncated %s length", field)
		return ""
	}
	n := int(binary.BigEndian.Uint16(d.b[d.pos:]))
	if n == 0 {
		d.fail(d.pos, ErrCorrupt, "empty %s", field)
		return ""
	}
	d.pos += 2
	return string(d.bytes(n))
}

// nameVar reads a uvarint-length-prefixed, non-empty name of at most
// MaxNameLen bytes.
func (d *decoder) nameVar(field string) string {
	at := d.pos
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n == 0 || n > MaxNameLen {
		d.fail(at, ErrCorrupt, "%s length %d out of range", field, n)
		return ""
	}
	return string(d.bytes(int(n)))
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail(d.pos, ErrCorrupt, "bad uvarint")
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.fail(d.pos, ErrCorrupt, "bad varint")
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) float64() float64 {
	b := d.bytes(float64Bytes)
	if d.err != nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

func (d *decoder) time() time.Time {
	at := d.pos
	sec := d.varint()
	nsec := d.uvarint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= nanosPerSec {
		d.fail(at, ErrCorrupt, "nanoseconds %d out of range", nsec)
		return time.Time{}
	}
	switch {
	case sec == zeroUnixSec && nsec == 0:
		return time.Time{}
	case sec < math.MinInt64/nanosPerSec+1 || sec > math.MaxInt64/nanosPerSec-1:
		// Readers compute in int64 nanoseconds since 1970 (flow does):
		// an instant outside their range (1678 to 2262), but the zero
		// time, is no writer's.
		d.fail(at, ErrCorrupt, "seconds %d out of range", sec)
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// zeroUnixSec is time.Time{}.Unix(): the zero time, which encodes as
// itself.
const zeroUnixSec = -62135596800

// end fails if bytes are left.
func (d *decoder) end() {
	if d.err == nil && d.rest() != 0 {
		d.fail(d.pos, ErrCorrupt, "%d trailing bytes", d.rest())
	}
}

// frame reads a uvarint length and returns a decoder over that many of the
// bytes that follow, moving d past them. ok is false (d.err is set) when
// the length exceeds what is left.
func (d *decoder) frame(field string) (sub decoder, ok bool) {
	at := d.pos
	size := d.uvarint()
	if d.err == nil && size > uint64(d.rest()) {
		d.fail(at, ErrCorrupt, "%s length %d exceeds the %d bytes left", field, size, d.rest())
	}
	if d.err != nil {
		return decoder{}, false
	}
	sub = decoder{what: d.what, b: d.b[:d.pos+int(size)], pos: d.pos}
	d.pos += int(size)
	return sub, true
}

// checkBody fails on counters no writer makes: a count above MaxCount,
// rewards or a conversion that are negative or not finite, a negative
// reward delay. at is where the body begins. (The cut and the period are
// not sums: flow ignores a cut that is not finite, and a period that is
// not the budget's current one.)
func (d *decoder) checkBody(at int, e *entryBody) {
	if d.err != nil {
		return
	}
	if msg := badBody(e.total, e.inPeriod, e.conv, e.delay); msg != "" {
		d.fail(at, ErrCorrupt, "%s", msg)
	}
}

// badBody says what is wrong with a report's counters ("" when nothing).
func badBody(total, in flow.Counters, conv float64, delay int64) string {
	finite := func(f float64) bool { return f >= 0 && !math.IsInf(f, 0) }
	switch {
	case max(total.Offered, total.Passed, in.Offered, in.Passed) > MaxCount:
		return fmt.Sprintf("count above 2^53 (offered %d, passed %d; %d, %d in the period)", total.Offered, total.Passed, in.Offered, in.Passed)
	case !finite(total.Rewards) || !finite(in.Rewards):
		return fmt.Sprintf("rewards %v (%v in the period) not finite and non-negative", total.Rewards, in.Rewards)
	case !finite(conv):
		return fmt.Sprintf("conversion %v not finite and non-negative", conv)
	case delay < 0:
		return fmt.Sprintf("negative reward delay %d", delay)
	}
	return ""
}
