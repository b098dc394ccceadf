package dashboard

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// benchServer is a Server over n synthetic budgets, sampled twice.
func benchServer(b *testing.B, n int) (*Server, *fakeSource) {
	b.Helper()
	src := newFake()
	src.synthetic(n, begin)
	now := begin.Add(20 * time.Minute)
	src.progress(begin, now)
	s := New(src, Clock(func() time.Time { return now }))
	s.Sample(now.Add(time.Second))
	return s, src
}

// BenchmarkSample measures one sample (status of every budget, the
// snapshot and its orders, a point on every curve) at 1k, 10k and 100k
// budgets whose counters all moved.
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("budgets=%d", n), func(b *testing.B) {
			s, src := benchServer(b, n)
			now := begin.Add(21 * time.Minute)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				now = now.Add(time.Second)
				src.progress(begin, now.Add(time.Duration(i%2)*time.Minute)) // values move at every sample
				b.StartTimer()
				s.Sample(now)
			}
		})
	}
}

// BenchmarkList measures GET /api/v1/budgets for a page of 100 (the
// handler, JSON included) at 1k, 10k and 100k budgets: sorted as a tree,
// by deviation, and filtered by a search that matches a tenth of them.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		s, _ := benchServer(b, n)
		h := s.Handler()
		for _, q := range []string{"sort=tree", "sort=deviation", "q=5&sort=deviation", "sort=name&offset=" + fmt.Sprint(n-100)} {
			b.Run(fmt.Sprintf("budgets=%d/%s", n, q), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/budgets?limit=100&"+q, nil))
					if w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}
