package decode

import (
	"encoding/binary"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/throttler/throttler/internal/bytesconv"
)

// parseNumber returns the value of a valid JSON number: exactly for
// integers of up to 15 digits, else as strconv.ParseFloat rounds it (±Inf
// beyond the float64 range, as gjson).
func parseNumber(b []byte) float64 {
	if len(b) <= 15 {
		var n int64
		i := 0
		neg := b[0] == '-'
		if neg {
			i = 1
		}
		for ; len(b)-i >= 8; i += 8 {
			d, ok := digits8(binary.LittleEndian.Uint64(b[i:]))
			if !ok {
				break
			}
			n = n*100_000_000 + int64(d)
		}
		for ; i < len(b); i++ {
			c := b[i]
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int64(c-'0')
		}
		if i == len(b) {
			if neg {
				if n == 0 {
					return negZero
				}
				return -float64(n)
			}
			return float64(n)
		}
	}
	f, _ := strconv.ParseFloat(bytesconv.String(b), 64)
	return f
}

// digits8 returns the value of eight ASCII decimal digits, the first in
// the low byte of w (a little-endian load), and whether all eight are
// digits.
func digits8(w uint64) (uint64, bool) {
	if !isDigits8(w) {
		return 0, false
	}
	w -= 0x30 * lanes01
	// Pairs, quads, then all eight: at each step the more significant
	// half is in the lower lane.
	w = (w*10 + w>>8) & 0x00FF00FF00FF00FF
	w = (w*100 + w>>16) & 0x0000FFFF0000FFFF
	w = (w*10000 + w>>32) & 0xFFFFFFFF
	return w, true
}

// isDigits8 reports whether the eight bytes of w are ASCII decimal digits.
func isDigits8(w uint64) bool {
	const high = 0xF0F0F0F0F0F0F0F0
	// Every byte is 0x30-0x39: high nibble 3, and adding 6 carries
	// out of no low nibble (no carry crosses bytes: each is below 0x40).
	return w&high == 0x30*lanes01 && (w+0x06*lanes01)&high == 0x30*lanes01
}

var negZero = func() float64 { z := 0.0; return -z }()

// unescape returns the text of a valid JSON string body with escapes. A
// lone surrogate becomes U+FFFD, as encoding/json does.
func unescape(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(b[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(b[i+2:i+6])); r2 != utf8.RuneError {
						out = utf8.AppendRune(out, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, b[i+1])
		}
		i += 2
	}
	return string(out)
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
