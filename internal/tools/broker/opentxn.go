package broker

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A transaction left open in the data dir: kfake, restarted after a
// SIGKILL, aborts it without writing abort markers, and kgo's
// read_committed readers then drop the producer's later transactions (see
// recoverOpenTxns). The scan below finds such transactions before kfake
// loads the dir.
//
// It reads kfake's layout of the data dir: partitions/<escaped
// topic>-<partition>/<base offset>.dat, each file Kafka RecordBatches back
// to back in their wire format, and session_state.json (kfake's
// persist.go). A layout it does not recognise yields no open transaction,
// which the broker's crash test would show.

// openTxn is a transaction of one producer id with data batches and no
// control batch after them in some partitions.
type openTxn struct {
	producerID int64
	epoch      int16 // of its last data batch
	partitions map[string][]int32
}

// batchHeader is what the scan needs of a RecordBatch header.
type batchHeader struct {
	firstOffset int64
	length      int32 // bytes after the length field
	attributes  int16
	producerID  int64
	epoch       int16
	firstSeq    int32
	numRecords  int32
}

const (
	batchHeaderSize   = 61 // bytes of a v2 RecordBatch before its records
	attrTransactional = 0x10
	attrControl       = 0x20
)

// dirScan is what the data dir's segments say of its producers.
type dirScan struct {
	open     map[int64]*openTxn // by producer id
	openDirs []string           // the partition directories that hold them
	windows  []seqWindow        // of every producer, partition by partition
	newest   time.Time          // the newest modification of a segment file
}

// scanDataDir reads the segments of the data dir dir. The transactions
// of the producers in resumed are not open.
func scanDataDir(dir string, resumed map[int64]bool) (*dirScan, error) {
	root := filepath.Join(dir, "partitions")
	entries, err := os.ReadDir(root)
	sc := &dirScan{open: map[int64]*openTxn{}}
	if errors.Is(err, os.ErrNotExist) {
		return sc, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		topic, part, ok := parsePartitionDir(e.Name())
		if !e.IsDir() || !ok {
			continue
		}
		pdir := filepath.Join(root, e.Name())
		ps, err := scanPartition(pdir)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", pdir, err)
		}
		if ps.newest.After(sc.newest) {
			sc.newest = ps.newest
		}
		for pid := range resumed {
			delete(ps.open, pid)
		}
		if len(ps.open) > 0 {
			sc.openDirs = append(sc.openDirs, pdir)
		}
		for pid, epoch := range ps.open {
			t := sc.open[pid]
			if t == nil {
				t = &openTxn{producerID: pid, epoch: epoch, partitions: map[string][]int32{}}
				sc.open[pid] = t
			}
			t.epoch = max(t.epoch, epoch)
			t.partitions[topic] = append(t.partitions[topic], part)
		}
		for pid, w := range ps.windows {
			w.pid, w.topic, w.part = pid, topic, part
			sc.windows = append(sc.windows, *w)
		}
	}
	return sc, nil
}

// resumedTxns returns the producers whose transactions a graceful stop
// saved in session_state.json (kfake resumes them, and removes the file
// once loaded).
func resumedTxns(dir string) map[int64]bool {
	raw, err := os.ReadFile(filepath.Join(dir, "session_state.json"))
	if err != nil {
		return nil
	}
	var ss struct {
		InProgressTxns []struct {
			PID int64 `json:"pid"`
		} `json:"inProgressTxns"`
	}
	if json.Unmarshal(raw, &ss) != nil {
		return nil // kfake ignores a corrupt file too
	}
	resumed := map[int64]bool{}
	for _, t := range ss.InProgressTxns {
		resumed[t.PID] = true
	}
	return resumed
}

// parsePartitionDir splits kfake's "<escaped topic>-<partition>".
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	topic, err := url.PathUnescape(name[:i])
	if err != nil {
		return "", 0, false
	}
	return topic, int32(p), true
}

// partScan is what one partition's segments say of its producers.
type partScan struct {
	open    map[int64]int16 // producers in a transaction: epoch of their last data batch
	windows map[int64]*seqWindow
	newest  time.Time // the newest modification of a segment file
}

// scanPartition reads the segments of the partition in pdir.
func scanPartition(pdir string) (*partScan, error) {
	entries, err := os.ReadDir(pdir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	ps := &partScan{open: map[int64]int16{}, windows: map[int64]*seqWindow{}}
	for _, e := range entries {
		if b, ok := strings.CutSuffix(e.Name(), ".dat"); ok {
			if n, err := strconv.ParseInt(b, 10, 64); err == nil {
				bases = append(bases, n)
			}
			if info, err := e.Info(); err == nil && info.ModTime().After(ps.newest) {
				ps.newest = info.ModTime()
			}
		}
	}
	slices.Sort(bases)
	for _, base := range bases {
		err := eachBatchHeader(filepath.Join(pdir, strconv.FormatInt(base, 10)+".dat"), func(h batchHeader) {
			switch {
			case h.attributes&attrControl != 0:
				delete(ps.open, h.producerID) // a commit or an abort ends it
				return
			case h.attributes&attrTransactional != 0:
				ps.open[h.producerID] = h.epoch
			}
			if h.producerID >= 0 {
				w := ps.windows[h.producerID]
				if w == nil {
					w = &seqWindow{}
					ps.windows[h.producerID] = w
				}
				w.add(h)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// eachBatchHeader calls fn with the header of every complete batch of a
// segment file; a batch cut short by a crash ends the scan, as it ends
// kfake's load.
func eachBatchHeader(path string, fn func(batchHeader)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var buf [batchHeaderSize]byte
	for pos := int64(0); ; {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return err
		}
		h := batchHeader{
			firstOffset: int64(binary.BigEndian.Uint64(buf[0:8])),
			length:      int32(binary.BigEndian.Uint32(buf[8:12])),
			attributes:  int16(binary.BigEndian.Uint16(buf[21:23])),
			producerID:  int64(binary.BigEndian.Uint64(buf[43:51])),
			epoch:       int16(binary.BigEndian.Uint16(buf[51:53])),
			firstSeq:    int32(binary.BigEndian.Uint32(buf[53:57])),
			numRecords:  int32(binary.BigEndian.Uint32(buf[57:61])),
		}
		size := 12 + int64(h.length)
		if h.length < batchHeaderSize-12 || pos+size > st.Size() || buf[16] != 2 {
			return nil // torn or not a v2 batch: kfake stops here too
		}
		fn(h)
		if _, err := r.Discard(int(size - batchHeaderSize)); err != nil {
			return nil
		}
		pos += size
	}
}
