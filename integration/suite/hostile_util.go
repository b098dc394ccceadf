package suite

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/testwait"
)

// Traffic produces good events to the input topic at a steady rate until
// stopped, and keeps every one it wrote: the ids that must come out once.
type Traffic struct {
	Cl    *kgo.Client
	Topic string
	Mu    sync.Mutex
	Sent  []*kgo.Record
	N     int
	Stop  chan struct{}
	Done  chan error
}

// StartTraffic produces perTick good events every tick (spread over
// users, so over every partition) until stop.
func StartTraffic(t *testing.T, conn []kgo.Opt, topic string, perTick int, tick time.Duration) *Traffic {
	t.Helper()
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Traffic{Cl: cl, Topic: topic, Stop: make(chan struct{}), Done: make(chan error, 1)}
	go func() {
		defer close(tr.Done)
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-tr.Stop:
				tr.Done <- nil
				return
			case <-tk.C:
			}
			recs := make([]*kgo.Record, 0, perTick)
			for range perTick {
				tr.N++
				user := fmt.Sprintf("u%d", tr.N%97)
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(user),
					Value: fmt.Appendf(nil, `{"id":"g%d","campaign":"open","user":%q,"device":"d%d"}`, tr.N, user, tr.N%10)})
			}
			if err := tr.Produce(recs...); err != nil {
				tr.Done <- err
				return
			}
		}
	}()
	t.Cleanup(func() { tr.End(t) })
	return tr
}

// Produce writes recs and keeps them as sent (good ids).
func (tr *Traffic) Produce(recs ...*kgo.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	tr.Mu.Lock()
	tr.Sent = append(tr.Sent, recs...)
	tr.Mu.Unlock()
	return nil
}

// End stops the traffic (once) and fails the test if producing failed.
func (tr *Traffic) End(t *testing.T) {
	select {
	case <-tr.Stop:
	default:
		close(tr.Stop)
	}
	if err := <-tr.Done; err != nil {
		t.Errorf("traffic: %v", err)
	}
	tr.Cl.Close()
}

func (tr *Traffic) Records() []*kgo.Record {
	tr.Mu.Lock()
	defer tr.Mu.Unlock()
	return append([]*kgo.Record(nil), tr.Sent...)
}

// ProduceRaw writes recs as they are (their partitions set).
func ProduceRaw(ctx context.Context, t *testing.T, conn []kgo.Opt, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(append(conn, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d raw records: %v", len(recs), err)
	}
}

// HttpAddr returns the address a `throttler run` process logged it
// serves HTTP on.
func HttpAddr(t *testing.T, p *Proc) string {
	t.Helper()
	line := p.WaitLine(t, `"http listening"`, 60*time.Second)
	var v struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &v); err != nil || v.Addr == "" {
		t.Fatalf("%s: no address in %q", p.Name, line)
	}
	return v.Addr
}

// FetchURL GETs url (with host as the Host header when set) within 2 s and
// returns the status, headers and at most 8 MiB of body.
func FetchURL(t *testing.T, url, host string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatalf("GET %s: reading: %v", url, err)
	}
	return resp.StatusCode, resp.Header, body
}

// Metric sums the samples of a metric (any labels) in a /metrics body.
func Metric(body []byte, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) || len(line) == len(name) || (line[len(name)] != ' ' && line[len(name)] != '{') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// CpuTicks returns the user and system clock ticks pid used so far.
func CpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

// WaitIdle waits until the process uses less than a fifth of a core over
// two seconds (clock ticks are 1/100 s): a request it served is over,
// not left running after its client went away.
func WaitIdle(t *testing.T, p *Proc) {
	t.Helper()
	pid := p.Cmd.Process.Pid
	var last float64
	ok := testwait.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		a := CpuTicks(t, pid)
		time.Sleep(2 * time.Second) // real time: the window the CPU is measured over
		last = float64(CpuTicks(t, pid)-a) / 100 / 2
		return last < 0.2
	})
	if !ok {
		t.Errorf("%s still uses %.2f of a core", p.Name, last)
	}
}

// SlowHeaders opens a connection to addr, sends half a request and
// reports whether the server closes it within limit (its read-header
// timeout), instead of holding it for as long as the client likes.
func SlowHeaders(t *testing.T, addr string, limit time.Duration) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err = bufio.NewReader(c).ReadByte()
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// Text returns every line, joined.
func (l *Lines) Text() string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return strings.Join(l.All, "\n")
}

// MaxLine returns the length of the longest line p logged.
func MaxLine(p *Proc) (int, string) {
	n, which := 0, ""
	for _, l := range []*Lines{p.Out, p.Err} {
		l.Mu.Lock()
		for _, s := range l.All {
			if len(s) > n {
				n, which = len(s), s[:min(len(s), 200)]
			}
		}
		l.Mu.Unlock()
	}
	return n, which
}

// Framed returns a value in the schema registry wire format of schema id
// with a payload of junk.
func Framed(id uint32) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, 2, 'x', 0)
}

// WaitPast waits until group has committed, on every partition of topic,
// at least the end offset the partition has now: with traffic going on,
// the group passes a mark rather than ever standing at the end.
func WaitPast(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if !WaitFor(2*time.Minute, func() bool {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		past := true
		ends.Each(func(o kadm.ListedOffset) {
			if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At < o.Offset {
				past = false
			}
		})
		return past
	}) {
		t.Fatalf("group %s did not pass the ends %s had", group, topic)
	}
}
