package hangtxn

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Complete writes the marker of every hang whose decision is known, and
// returns those it wrote. A partition's error (for instance
// CLUSTER_AUTHORIZATION_FAILED: writing markers takes the ClusterAction
// permission) is returned with the others'.
func Complete(ctx context.Context, cl *kgo.Client, hangs []Hang) ([]Hang, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	var todo []Hang
	for _, h := range hangs {
		if !h.Known {
			continue
		}
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = h.ProducerID, h.MarkerEpoch, h.Commit
		// The partition refuses a coordinator epoch below the last one it
		// saw from the producer; a higher one would fence the coordinator.
		m.CoordinatorEpoch = max(h.CoordinatorEpoch, 0)
		m.TransactionVersion = 2
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = h.Topic, []int32{h.Partition}
		m.Topics = append(m.Topics, t)
		req.Markers = append(req.Markers, m)
		todo = append(todo, h)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	type marker struct {
		topic     string
		partition int32
		pid       int64
	}
	failed := map[marker]bool{}
	var errs []error
	sharded := true
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			errs = append(errs, shard.Err)
			sharded = false // which partitions the shard held is not known
			continue
		}
		resp := shard.Resp.(*kmsg.WriteTxnMarkersResponse)
		for _, m := range resp.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						failed[marker{t.Topic, p.Partition, m.ProducerID}] = true
						errs = append(errs, fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err))
					}
				}
			}
		}
	}
	var done []Hang
	for _, h := range todo {
		if !failed[marker{h.Topic, h.Partition, h.ProducerID}] && sharded {
			done = append(done, h)
		}
	}
	return done, errors.Join(errs...)
}
