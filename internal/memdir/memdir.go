// Package memdir makes scratch directories in memory where it can: the data
// dirs of the brokers that the demo and the tests start and throw away.
package memdir

import "os"

// MkdirTemp makes a new directory for the data of a broker that nobody
// keeps (a test's, the demo's), named after pattern as os.MkdirTemp names
// it: in memory where a tmpfs with room for it is mounted (memDir), else in
// the system's temporary directory. kfake reads and writes its data dir in
// the loop that serves every request, so a disk busy with other writes
// (the writeback of a build, a compaction's fsync) stalls the broker, and
// every client with it: 4 to 5 s stalls were seen on a loaded 2-core
// machine, which a test that follows a curve second by second reads as
// pacing gone wrong. Memory does not stall so. Apache Kafka's controller
// syncs its metadata log as it commits, which a busy disk slows as much.
func MkdirTemp(pattern string) (string, error) {
	if dir := memDir(); dir != "" {
		if d, err := os.MkdirTemp(dir, pattern); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", pattern)
}
