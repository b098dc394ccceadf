package stats

import (
	"fmt"
	"strconv"
	"strings"
)

// SourceName is the name of the source that is one partition of an input
// topic: "topic/partition". Kafka topic names cannot contain '/', so the name
// is unambiguous.
func SourceName(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// ParseSource splits a source name made by SourceName.
func ParseSource(source string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(source, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("stats: source %q: %w: want topic/partition", source, ErrInvalidReport)
	}
	p, err := strconv.ParseInt(source[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, fmt.Errorf("stats: source %q: %w: bad partition number", source, ErrInvalidReport)
	}
	return source[:i], int32(p), nil
}
