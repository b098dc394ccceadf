package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// session hides the difference between the two delivery guarantees from
// the poll loop. Only the poll loop calls it, never concurrently with
// itself; produce may run concurrently with poll but not with begin or end.
type session interface {
	client() *kgo.Client
	poll(ctx context.Context, max int) kgo.Fetches
	// begin starts a unit of work (a transaction).
	begin() error
	// end flushes what was produced since begin and commits it together
	// with the polled offsets (at least once, the offset commit is
	// issued and completes later: see plainSession). committed is false when the unit was
	// aborted instead: the client then rewinds every partition to its
	// committed offset and the caller must roll its state back. err is
	// fatal. held, if not nil, replaces the offsets committed for those
	// partitions (delay budgets: their first unprocessed record).
	end(ctx context.Context, commit bool, held map[string]map[int32]kgo.EpochOffset) (committed bool, err error)
	allowRebalance()
	close()
}

// txnSession is exactly-once: a kgo.GroupTransactSession.
type txnSession struct {
	s *kgo.GroupTransactSession
	// unblockAfter is how long end lets End wait for its heartbeat
	// before it allows a pending rebalance (see end).
	unblockAfter time.Duration
}

// unblockAfter returns how long a txnSession's end waits before it
// allows a pending rebalance: two heartbeat intervals of cl.
func unblockAfter(cl *kgo.Client) time.Duration {
	if hb, ok := cl.OptValue(kgo.HeartbeatInterval).(time.Duration); ok && hb > 0 {
		return 2 * hb
	}
	return 6 * time.Second
}

func (t txnSession) client() *kgo.Client { return t.s.Client() }
func (t txnSession) poll(ctx context.Context, max int) kgo.Fetches {
	return t.s.PollRecords(ctx, max)
}
func (t txnSession) begin() error {
	if err := t.s.Begin(); err != nil {
		return &sessionError{err}
	}
	return nil
}
func (t txnSession) end(ctx context.Context, commit bool, held map[string]map[int32]kgo.EpochOffset) (bool, error) {
	if held != nil {
		ctx = kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
			overrideTxnOffsets(req, held)
			return nil
		})
	}
	// End flushes before ending the transaction (or aborts buffered
	// records), commits the polled offsets in the transaction, and on an
	// abort rewinds the consumer to the committed offsets.
	//
	// Before it ends the transaction, End forces a heartbeat and waits
	// for its answer, a revoke or the loss of the partitions. When the
	// heartbeat loop has just stopped on an error (the broker went away
	// and came back, say), nothing answers, and the loss waits for
	// AllowRebalance (BlockRebalanceOnPoll): End would hang until ctx
	// ends and then fail to end the transaction at all. So if End takes
	// long, the pending rebalance is allowed: the partitions' loss then
	// reaches End, which aborts. The records are processed by then, and
	// commit rolls back only the partitions still owned.
	unblock := time.AfterFunc(t.unblockAfter, t.s.AllowRebalance)
	committed, err := t.s.End(ctx, kgo.TransactionEndTry(commit))
	unblock.Stop()
	if err != nil {
		return false, &sessionError{fmt.Errorf("end transaction: %w", err)}
	}
	return committed, nil
}
func (t txnSession) allowRebalance() { t.s.AllowRebalance() }
func (t txnSession) close()          { t.s.Close() }

// plainSession is at-least-once: produce, flush, commit offsets.
//
// The offset commit is asynchronous: end issues it and returns, and the
// next unit of work runs while the group coordinator writes it. The
// partitions' ledgers, flushed before it, carry the same offsets and are
// what a partition starts from (partition.start skips the records its
// ledger already counts), so a group offset that lags by a commit costs
// nothing but records read again and skipped. kgo orders commits: each
// waits for the one before it, and a revoke's synchronous commit
// (commitRevoked) comes after them. A commit that fails fails the session
// at the next end; close waits for the one in flight.
type plainSession struct {
	cl      *kgo.Client
	log     zerolog.Logger
	commits *asyncCommits
}

func newPlainSession(cl *kgo.Client, log zerolog.Logger) plainSession {
	return plainSession{cl: cl, log: log, commits: &asyncCommits{}}
}

// asyncCommits tracks a plainSession's offset commits in flight and the
// first that failed.
type asyncCommits struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

// failed returns the first commit's failure, if any, and forgets it.
func (c *asyncCommits) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

func (c *asyncCommits) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

// errCannotAbort is returned when an at-least-once worker would have to
// take back records it has produced.
var errCannotAbort = errors.New("at-least-once: produce failed; offsets left uncommitted, restart to reprocess")

func (p plainSession) client() *kgo.Client { return p.cl }
func (p plainSession) poll(ctx context.Context, max int) kgo.Fetches {
	return p.cl.PollRecords(ctx, max)
}
func (p plainSession) begin() error { return nil }
func (p plainSession) end(ctx context.Context, commit bool, held map[string]map[int32]kgo.EpochOffset) (bool, error) {
	if err := p.commits.failed(); err != nil {
		return false, &sessionError{fmt.Errorf("commit offsets: %w", err)}
	}
	if err := p.cl.Flush(ctx); err != nil {
		return false, &sessionError{fmt.Errorf("flush: %w", err)}
	}
	if !commit {
		return false, &sessionError{errCannotAbort}
	}
	p.commitAsync(mergeOffsets(p.cl.UncommittedOffsets(), held))
	return true, nil
}

// commitAsync issues the commit of offsets (see plainSession).
func (p plainSession) commitAsync(offsets map[string]map[int32]kgo.EpochOffset) {
	if len(offsets) == 0 {
		return
	}
	// The commit outlives ctx (the unit of work's): a canceled request
	// would close the connection it waits on, and kgo orders commits by
	// that connection.
	cctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	p.commits.wg.Add(1)
	p.cl.CommitOffsets(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		defer p.commits.wg.Done()
		defer cancel()
		if err == nil {
			err = commitResponseErr(resp)
		}
		switch {
		case err == nil:
		case groupMovedOn(err):
			// The outputs and the ledgers are written. Partitions
			// still ours keep their offsets uncommitted for the
			// next commit; lost ones are read again by their new
			// owner, which skips what their ledgers count.
			// Neither is fatal, and the partitions' state must not
			// be rolled back.
			p.log.Warn().Err(err).Msg("offset commit refused by the group (rebalance or expired session); outputs kept, offsets committed later or by the next owner")
		default:
			p.commits.fail(err)
		}
	})
}

// groupMovedOn reports whether an offset commit failed because this member
// is no longer part of the group's current generation.
func groupMovedOn(err error) bool {
	return errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.FencedInstanceID) ||
		errors.Is(err, kerr.StaleMemberEpoch)
}
func (p plainSession) allowRebalance() { p.cl.AllowRebalance() }

// close waits for the offset commits in flight (each ends within
// shutdownTimeout), then closes the client, leaving the group.
func (p plainSession) close() {
	p.commits.wg.Wait()
	p.cl.Close()
}

// sessionError is a failure of the session itself, its client or its
// transaction (the brokers unreachable when it ended, a fenced producer, a
// flush that failed): the worker can carry on with a new session (see
// Worker.runSessions).
type sessionError struct{ err error }

func (e *sessionError) Error() string { return e.err.Error() }
func (e *sessionError) Unwrap() error { return e.err }
