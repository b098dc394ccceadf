// Package control holds throttler's control topic: budget changes made
// while the workers run.
//
// The control topic is compacted; its key is a budget's name. Its value is
// one of:
//
//   - a definition, a JSON object with "version": 1 and the budget's fields
//     under their config-file names (name, target, begin, end, reserve,
//     period, kind, conversion, reward_delay, scored, parent, action;
//     times RFC 3339, durations as "30s"; the fields at their defaults
//     may be left out, and a build from before conversion and
//     reward_delay rejects a record that has them):
//     the budget is this, whether or not the config file has it;
//   - a deletion, {"version": 1, "name": N, "deleted": true}: the budget is
//     deleted, even if the config file has it;
//   - a tombstone (no value): the control topic no longer says anything of
//     the budget, so the config file's definition (or its absence) holds.
//
// Deletion is a record of its own rather than a tombstone because
// compaction drops tombstones after delete.retention.ms: a config-file
// budget deleted by a tombstone would come back on a worker started after
// that. With these three kinds the budgets in force depend only on the
// config file and the newest record of each key, which compaction keeps.
//
// A worker starts from its config file's budgets, reads the control topic
// from its start before consuming, and then follows it; see State for how
// records apply and what happens to a record that does not fit.
package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/throttler/throttler/config"
	"github.com/throttler/throttler/internal/clip"
)

// Version is the major version of the record values this package writes
// and reads.
const Version = 1

// Op is what a record does to its budget.
type Op uint8

// Ops.
const (
	OpSet    Op = iota + 1 // define (add or replace) the budget
	OpDelete               // delete the budget
	OpReset                // forget the control topic's word: the config file's definition holds
)

var opNames = [...]string{OpSet: "set", OpDelete: "delete", OpReset: "reset"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Record is one control record, decoded.
type Record struct {
	Name   string
	Op     Op
	Budget config.Budget // for OpSet
}

// ErrInvalidRecord is wrapped by every error about a record's content.
var ErrInvalidRecord = errors.New("invalid control record")

// RecordError says what is wrong with a record: Field is the JSON key
// ("" for the record as a whole).
type RecordError struct {
	Key    string
	Field  string
	Reason string
}

// Error names the record by its key, clipped (internal/clip): a key is
// what a record carries, of any length.
func (e *RecordError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("control record %q: %s", clip.String(e.Key), clip.String(e.Reason))
	}
	return fmt.Sprintf("control record %q: %s: %s", clip.String(e.Key), e.Field, clip.String(e.Reason))
}

// Unwrap returns ErrInvalidRecord.
func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// value is the JSON of a definition or a deletion.
type value struct {
	Version int      `json:"version"`
	Name    string   `json:"name"`
	Deleted bool     `json:"deleted,omitempty"`
	Target  *float64 `json:"target,omitempty"`
	Begin   string   `json:"begin,omitempty"`
	End     string   `json:"end,omitempty"`
	Reserve string   `json:"reserve,omitempty"`
	Period  string   `json:"period,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	// a rewards budget's prior
	Conversion  float64 `json:"conversion,omitempty"`
	RewardDelay string  `json:"reward_delay,omitempty"`
	Scored      bool    `json:"scored,omitempty"`
	Parent      string  `json:"parent,omitempty"`
	Action      string  `json:"action,omitempty"`
}

// EncodeSet returns the key and value defining b, which must pass
// config.CheckBudget.
func EncodeSet(b config.Budget) (key, val []byte, err error) {
	if ps := config.CheckBudget(b); len(ps) > 0 {
		return nil, nil, ps
	}
	v := value{Version: Version, Name: b.Name, Target: &b.Target, Kind: string(b.Kind), Conversion: b.Conversion,
		Scored: b.Scored, Parent: b.Parent, Action: string(b.Action)}
	if !b.Begin.IsZero() {
		v.Begin = b.Begin.Format(time.RFC3339Nano)
	}
	if !b.End.IsZero() {
		v.End = b.End.Format(time.RFC3339Nano)
	}
	if b.Reserve != 0 {
		v.Reserve = b.Reserve.String()
	}
	if b.Period != 0 {
		v.Period = b.Period.String()
	}
	if b.RewardDelay != 0 {
		v.RewardDelay = b.RewardDelay.String()
	}
	val, err = json.Marshal(v)
	return []byte(b.Name), val, err
}

// EncodeDelete returns the key and value deleting budget name.
func EncodeDelete(name string) (key, val []byte, err error) {
	if name == "" {
		return nil, nil, &RecordError{Field: "name", Reason: "must not be empty"}
	}
	val, err = json.Marshal(value{Version: Version, Name: name, Deleted: true})
	return []byte(name), val, err
}

// Decode reads a record. A nil value is a tombstone (OpReset). Errors are
// *RecordError, wrapping ErrInvalidRecord; a definition that breaks the
// config file's rules (config.CheckBudget) is one too, on the first
// field at fault.
func Decode(key, val []byte) (Record, error) {
	name := string(key)
	bad := func(field, reason string) (Record, error) {
		return Record{}, &RecordError{Key: name, Field: field, Reason: reason}
	}
	if name == "" {
		return bad("", "empty key: the key must be the budget's name")
	}
	if val == nil {
		return Record{Name: name, Op: OpReset}, nil
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(val, &head); err != nil {
		return bad("", "not a JSON object: "+err.Error())
	}
	switch {
	case head.Version == nil:
		return bad("version", "missing")
	case *head.Version != Version:
		return bad("version", fmt.Sprintf("%d is not supported (this build reads %d)", *head.Version, Version))
	}
	var v value
	dec := json.NewDecoder(bytes.NewReader(val))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return bad("", strings.TrimPrefix(err.Error(), "json: "))
	}
	if v.Name != name {
		return bad("name", fmt.Sprintf("%q differs from the key %q", v.Name, name))
	}
	if v.Deleted {
		if v.Target != nil || v.Begin != "" || v.End != "" || v.Period != "" || v.Reserve != "" || v.Kind != "" ||
			v.Conversion != 0 || v.RewardDelay != "" || v.Scored || v.Parent != "" || v.Action != "" {
			return bad("deleted", "a deletion carries no definition")
		}
		return Record{Name: name, Op: OpDelete}, nil
	}
	b := config.Budget{Name: name, Kind: config.Kind(v.Kind), Conversion: v.Conversion, Scored: v.Scored, Parent: v.Parent, Action: config.Action(v.Action)}
	if v.Target == nil {
		return bad("target", "missing")
	}
	b.Target = *v.Target
	var err error
	parse := func(field, s string, dst *time.Time) {
		if s != "" && err == nil {
			if *dst, err = time.Parse(time.RFC3339Nano, s); err != nil {
				err = &RecordError{Key: name, Field: field, Reason: fmt.Sprintf("%q is not an RFC 3339 time", s)}
			}
		}
	}
	dur := func(field, s string, dst *time.Duration) {
		if s != "" && err == nil {
			if *dst, err = time.ParseDuration(s); err != nil {
				err = &RecordError{Key: name, Field: field, Reason: fmt.Sprintf("%q is not a duration", s)}
			}
		}
	}
	parse("begin", v.Begin, &b.Begin)
	parse("end", v.End, &b.End)
	dur("reserve", v.Reserve, &b.Reserve)
	dur("period", v.Period, &b.Period)
	dur("reward_delay", v.RewardDelay, &b.RewardDelay)
	if err != nil {
		return Record{}, err
	}
	if b.Kind == "" {
		b.Kind = config.KindPasses
	}
	if ps := config.CheckBudget(b); len(ps) > 0 {
		return bad(ps[0].Path, ps[0].Reason)
	}
	return Record{Name: name, Op: OpSet, Budget: b}, nil
}
