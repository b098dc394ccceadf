// Package initcfg writes a worker's starter config from the records of a
// topic, for `throttler init`: it samples the topic (read-only, sample.go),
// finds the format of its records (JSON, or Avro or Protobuf in the schema
// registry's wire format, read with the worker's own decoder), lists the
// field paths it saw with their types and example values, proposes which
// paths hold the budget, the key, the id, the score and the time (by their
// names and by their values: distinct counts, ranges, times near now,
// uniqueness), and writes a commented config with a window budget per
// frequent budget value (starter.go).
//
// Analyze takes the records and the instant as arguments, so that the
// analysis is tested on fixed samples.
package initcfg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/throttler/throttler/decode"
)

// Report is what a sample shows and what it proposes.
type Report struct {
	Topic string `json:"topic"`
	// Format is json, avro or protobuf.
	Format string `json:"format"`
	// Sampled counts the records read; Events those read as events; the
	// others are in Bad (not of the format, or not decodable).
	Sampled int `json:"sampled"`
	Events  int `json:"events"`
	Bad     int `json:"bad"`
	// Now is the instant of the sample.
	Now time.Time `json:"now"`
	// Paths are the field paths seen, in order of first sight (a schema's
	// order for Avro and Protobuf).
	Paths []*PathStats `json:"paths"`
	// Fields are the proposed paths, by role.
	Fields map[Role]Proposal `json:"fields"`
	// Budgets are the frequent values of the budget path, most frequent
	// first; Rarer counts the other values.
	Budgets []Budget `json:"budgets"`
	Rarer   int      `json:"rarer_values"`
	// Span is how long the sampled events cover (by the time path, or the
	// record timestamps); 0 when unknown.
	Span time.Duration `json:"span_ns"`
	// Notes are what a user should know about the sample.
	Notes []string `json:"notes"`
}

// Budget is a budget value of the sample.
type Budget struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	// Rate is its events per second in the sample; 0 when the sample's
	// span is unknown.
	Rate float64 `json:"rate"`
}

// Budget values written as budgets: those of at least MinBudgetShare of
// the events, at most MaxBudgets, at least the most frequent.
const (
	MinBudgetShare = 0.01
	MaxBudgets     = 50
)

// ErrNeedRegistry is wrapped by Analyze's error when the records are
// framed for a schema registry and no registry was given.
var ErrNeedRegistry = errors.New("records framed for a schema registry: give its URL")

// Analyze reads records as events, in their format (schemas gives the
// schemas of framed records; nil when there is no registry), and proposes
// a config's fields and budgets, as of now. ctx bounds the schema lookups.
func Analyze(ctx context.Context, topic string, recs []Record, schemas decode.Schemas, now time.Time) (*Report, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("topic %s: no record to sample", topic)
	}
	r := &Report{Topic: topic, Sampled: len(recs), Now: now}
	var events []Event
	var order []string
	framed, firstID := 0, -1
	for _, rec := range recs {
		if id, ok := framedID(rec.Value); ok {
			framed++
			if firstID < 0 {
				firstID = id
			}
		}
	}
	if framed*2 > len(recs) {
		if schemas == nil {
			return nil, fmt.Errorf("%w (%d of %d records start with the magic byte 0 and a schema id, the first %d)",
				ErrNeedRegistry, framed, len(recs), firstID)
		}
		s, err := schemaOf(ctx, schemas, firstID)
		if err != nil {
			return nil, err
		}
		if !s.Format.Framed() {
			return nil, fmt.Errorf("schema %d is a %v schema: throttler reads JSON events unframed, and Avro or Protobuf framed", firstID, s.Format)
		}
		r.Format = s.Format.String()
		if events, order, r.Bad, err = framedEvents(ctx, recs, s.Format, schemas); err != nil {
			return nil, err
		}
	} else {
		r.Format = decode.FormatJSON.String()
		skipped := 0
		for _, rec := range recs {
			e, sk, ok := jsonEvent(rec)
			if !ok {
				r.Bad++
				continue
			}
			skipped += sk
			events = append(events, e)
		}
		if skipped > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%d keys were left out: a field path names keys of letters, digits, '_' and '-' (not all digits) only", skipped))
		}
	}
	r.Events = len(events)
	if r.Bad > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d records are not %s events: the worker would send such records to the dead-letter topic", r.Bad, r.Sampled, r.Format))
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("topic %s: none of the %d records sampled is a %s event", topic, len(recs), r.Format)
	}
	r.Paths = collect(events, order, now)
	r.Fields = propose(r.Paths, len(events))
	r.Span = span(r, events)
	r.budgets()
	for _, s := range r.Paths {
		if s.Seconds > s.Present/2 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s holds Unix seconds; the worker reads a numeric time as Unix milliseconds, so it is not proposed as the time", s.Path))
		}
	}
	return r, nil
}

// Stats returns the stats of path, or nil.
func (r *Report) Stats(path string) *PathStats {
	i := slices.IndexFunc(r.Paths, func(s *PathStats) bool { return s.Path == path })
	if i < 0 {
		return nil
	}
	return r.Paths[i]
}

// span returns how long the events cover: by the proposed time path, or
// by the record timestamps.
func span(r *Report, events []Event) time.Duration {
	if s := r.Stats(r.Fields[RoleTime].Path); s != nil {
		return s.Last.Sub(s.First)
	}
	var first, last time.Time
	for _, e := range events {
		if e.Time.IsZero() {
			continue
		}
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
		if e.Time.After(last) {
			last = e.Time
		}
	}
	return last.Sub(first)
}

// budgets lists the frequent values of the budget path.
func (r *Report) budgets() {
	s := r.Stats(r.Fields[RoleBudget].Path)
	if s == nil {
		return
	}
	unusable := 0
	for _, vc := range s.Top(s.Distinct) {
		if !validBudgetName(vc.Value) {
			unusable++
			continue
		}
		if len(r.Budgets) > 0 && (len(r.Budgets) >= MaxBudgets || float64(vc.Count) < MinBudgetShare*float64(r.Events)) {
			r.Rarer++
			continue
		}
		b := Budget{Name: vc.Value, Count: vc.Count}
		if r.Span >= time.Second {
			b.Rate = float64(vc.Count) / r.Span.Seconds()
		}
		r.Budgets = append(r.Budgets, b)
	}
	if unusable > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d values of %s cannot name a budget (empty, too long, or with control characters or surrounding space)", unusable, s.Path))
	}
}
