package broker

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
)

// kfake answers a produce resent by an idempotent producer (same
// sequence numbers) with the offset of its first write, from the
// producer's sequence window: its last five batches in the partition.
// It saves the windows in seq_windows.json only on a graceful stop, so
// after a SIGKILL it has none, or stale ones, and writes a resent batch a
// second time (internal/testsupport/kfakerepro). Real Kafka rebuilds them from the
// log. So does the broker, before kfake loads the dir, when segments were
// written after the last save of the windows.

// seqWindow is a producer's last batches in one partition, of its last
// epoch, oldest first.
type seqWindow struct {
	pid     int64
	topic   string
	part    int32
	epoch   int16
	entries []seqEntry // at most maxWindow
}

type seqEntry struct {
	FirstSeq int32 `json:"first_seq"`
	NextSeq  int32 `json:"next_seq"`
	Offset   int64 `json:"offset"`
}

// maxWindow is the number of batches kfake (as Kafka) remembers.
const maxWindow = 5

// add records a data batch of the producer.
func (w *seqWindow) add(h batchHeader) {
	if len(w.entries) > 0 && h.epoch != w.epoch {
		w.entries = w.entries[:0] // a new epoch starts its sequences anew
	}
	w.epoch = h.epoch
	next := int32((int64(h.firstSeq) + int64(h.numRecords)) % math.MaxInt32)
	w.entries = append(w.entries, seqEntry{h.firstSeq, next, h.firstOffset})
	if len(w.entries) > maxWindow {
		w.entries = w.entries[len(w.entries)-maxWindow:]
	}
}

// seqWindowsFile is kfake's seq_windows.json (persist.go: version 1,
// with entries; the legacy seq and offsets fields only carried over).
type seqWindowsFile struct {
	Version int             `json:"version"`
	Windows []seqWindowJSON `json:"windows"`
}

type seqWindowJSON struct {
	PID     int64               `json:"pid"`
	Topic   string              `json:"topic"`
	Part    int32               `json:"partition"`
	Entries [maxWindow]seqEntry `json:"entries,omitempty"`
	Count   uint8               `json:"count,omitempty"`
	Seq     [maxWindow]int32    `json:"seq,omitempty"`
	Offsets [maxWindow]int64    `json:"offsets,omitempty"`
	At      uint8               `json:"at"`
	Epoch   int16               `json:"epoch"`
	Seen    bool                `json:"seen,omitempty"`
	NextSeq int32               `json:"next_seq,omitempty"`
}

// rebuildSeqWindows rewrites seq_windows.json from the windows found in
// the segments, when segments were written after it (a crash), keeping
// the saved windows the segments do not show (a producer whose batches
// compaction removed). It returns whether it rewrote the file.
func rebuildSeqWindows(dir string, sc *dirScan) (bool, error) {
	path := filepath.Join(dir, "seq_windows.json")
	saved := seqWindowsFile{Version: 1}
	info, err := os.Stat(path)
	switch {
	case err == nil && !sc.newest.After(info.ModTime()):
		return false, nil // saved after the last write: up to date
	case err == nil:
		raw, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(raw, &saved); err != nil {
			return false, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return false, err
	}
	if len(sc.windows) == 0 {
		return false, nil
	}
	type key struct {
		pid   int64
		topic string
		part  int32
	}
	rebuilt := map[key]bool{}
	var out []seqWindowJSON
	for _, w := range sc.windows {
		rebuilt[key{w.pid, w.topic, w.part}] = true
		n := len(w.entries)
		j := seqWindowJSON{PID: w.pid, Topic: w.topic, Part: w.part, Count: uint8(n), At: uint8(n % maxWindow),
			Epoch: w.epoch, Seen: true, NextSeq: w.entries[n-1].NextSeq}
		copy(j.Entries[:], w.entries)
		out = append(out, j)
	}
	for _, w := range saved.Windows {
		if !rebuilt[key{w.PID, w.Topic, w.Part}] {
			out = append(out, w)
		}
	}
	saved.Windows = out
	return true, writeFileAtomic(path, saved)
}

// writeFileAtomic writes v as JSON to path through a temporary file.
func writeFileAtomic(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
