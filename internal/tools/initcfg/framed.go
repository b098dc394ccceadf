package initcfg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/throttler/throttler/decode"
)

// framedID returns the schema id of a value in the schema registry's wire
// format (magic byte 0, a 4-byte id), and for Protobuf the message index
// after it.
func framedID(v []byte) (int, bool) {
	if len(v) < 5 || v[0] != 0 {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(v[1:5])), true
}

// messageIndex reads the Protobuf message index at the start of b (a
// zigzag varint count, then that many indexes; a single 0 is [0]).
func messageIndex(b []byte) ([]int, bool) {
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > 32 {
		return nil, false
	}
	if n == 0 {
		return []int{0}, true
	}
	out := make([]int, 0, n)
	for range n {
		v, m := binary.Varint(b[k:])
		if m <= 0 || v < 0 {
			return nil, false
		}
		out, k = append(out, int(v)), k+m
	}
	return out, true
}

// schemaOf asks schemas for id until it answers, the registry says it has
// no such schema, or ctx ends: a registry client answers "not yet" while
// it fetches.
func schemaOf(ctx context.Context, schemas decode.Schemas, id int) (decode.Schema, error) {
	for {
		s, err := schemas.Schema(id)
		if err == nil || errors.Is(err, decode.ErrUnknownSchema) {
			return s, err
		}
		wait := 100 * time.Millisecond
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(err, &ra) && ra.RetryAfter() > 0 {
			wait = min(ra.RetryAfter(), time.Second)
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("schema %d: %w", id, err)
		case <-time.After(wait):
		}
	}
}

// framedEvents reads records of a framed format (the registry's schemas
// through schemas) with the worker's decoder: the schemas give the paths,
// decoders of at most decoderPaths paths each read them. It returns the
// events, the schemas' paths, and the records that do not decode.
func framedEvents(ctx context.Context, recs []Record, format decode.Format, schemas decode.Schemas) ([]Event, []string, int, error) {
	var paths []string
	type schemaKey struct {
		id    int
		index string
	}
	listed := map[schemaKey]bool{}
	for _, r := range recs {
		id, ok := framedID(r.Value)
		if !ok {
			continue
		}
		var index []int
		if format == decode.FormatProtobuf {
			if index, ok = messageIndex(r.Value[5:]); !ok {
				continue
			}
		}
		k := schemaKey{id, fmt.Sprint(index)}
		if listed[k] {
			continue
		}
		listed[k] = true
		s, err := schemaOf(ctx, schemas, id)
		if err != nil {
			return nil, nil, 0, err
		}
		if s.Format != format {
			continue // counted as bad below, by the decoder
		}
		ps, err := decode.SchemaPaths(s, index, maxPaths)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("schema %d: %w", id, err)
		}
		for _, p := range ps {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil, 0, errors.New("the schemas of the records have no field a path can name")
	}
	var decs []pathDecoder
	for chunk := range slices.Chunk(paths, decoderPaths) {
		d, err := decode.NewDecoder(decode.BudgetPath(chunk[0]), decode.Paths(chunk[1:]...),
			decode.WithFormat(format), decode.WithSchemas(schemas))
		if err != nil {
			return nil, nil, 0, err
		}
		decs = append(decs, pathDecoder{d, chunk})
	}
	var events []Event
	bad := 0
	for _, r := range recs {
		e, ok := decodeFramed(r, decs)
		if !ok {
			bad++
			continue
		}
		events = append(events, e)
	}
	return events, paths, bad, nil
}

// decoderPaths is how many paths one decoder reads (its scan's limit).
const decoderPaths = 32

// pathDecoder is a decoder and the paths it reads.
type pathDecoder struct {
	d     *decode.Decoder
	paths []string
}

// decodeFramed reads the paths of every decoder in one record; ok is false
// when the record does not decode (a budget the path does not hold is no
// failure: the first path of each decoder stands in for the budget).
func decodeFramed(r Record, decs []pathDecoder) (Event, bool) {
	e := Event{Key: string(r.Key), Time: r.Timestamp}
	for _, pd := range decs {
		var dst decode.Decoded
		err := pd.d.DecodeWith(r.Key, r.Value, r.Timestamp, &dst, pd.d.NewScan(""))
		var re *decode.RecordError
		if err != nil && (!errors.As(err, &re) || re.Reason != decode.ReasonMissingBudget && re.Reason != decode.ReasonBudgetType) {
			return e, false
		}
		for _, p := range pd.paths {
			if v := valueOf(dst.Field(r.Value, p)); v.Kind != Null {
				e.Fields = append(e.Fields, Field{Path: p, Value: v})
			}
		}
	}
	return e, true
}
