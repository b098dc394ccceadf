// Package memdir makes scratch directories in memory where it can: the data
// dirs of the brokers that the demo and the tests start and throw away.
package memdir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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
//
// A directory in memory holds memory until it is removed, and a process
// that dies before removing it (a test binary ended by go test's
// -timeout, a demo killed) leaves it behind: beside it, a file names the
// process that made it, and MkdirTemp removes the directories of the
// processes that are gone before it makes a new one. Remove the
// directory with RemoveAll.
func MkdirTemp(pattern string) (string, error) {
	if dir := memDir(); dir != "" {
		sweep(dir)
		if d, err := os.MkdirTemp(dir, pattern); err == nil {
			if err := os.WriteFile(d+ownerSuffix, []byte(strconv.Itoa(os.Getpid())), 0o600); err == nil {
				return d, nil
			}
			os.RemoveAll(d)
		}
	}
	return os.MkdirTemp("", pattern)
}

// RemoveAll removes a directory MkdirTemp made, and the file beside it
// naming its process.
func RemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if rerr := os.Remove(dir + ownerSuffix); rerr != nil && !os.IsNotExist(rerr) && err == nil {
		err = rerr
	}
	return err
}

// ownerSuffix names the file beside a directory in memory that holds the
// process id of its maker.
const ownerSuffix = ".owner-pid"

// sweep removes, in dir, the directories whose maker's process is gone.
func sweep(dir string) {
	owners, _ := filepath.Glob(filepath.Join(dir, "*"+ownerSuffix))
	for _, f := range owners {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		RemoveAll(strings.TrimSuffix(f, ownerSuffix))
	}
}
