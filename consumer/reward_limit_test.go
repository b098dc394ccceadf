package consumer

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/pipeline"
)

// TestRewardOutOfRange sends reward events of value 1.7e308 (twice, which
// would make the budget's counter +Inf), 7 (above a maximum of 5) and
// small ones: those above the maximum go to the dead-letter topic with
// reason reward_out_of_range, and the ledgers count the others exactly.
func TestRewardOutOfRange(t *testing.T) {
	env := newTestEnv(t)
	var recs []*kgo.Record
	want := 0.0
	for i := range 40 {
		v := fmt.Sprint(i % 4)
		switch i {
		case 3, 17:
			v = "1.7e308"
		case 25:
			v = "7"
		default:
			want += float64(i % 4)
		}
		recs = append(recs, &kgo.Record{Topic: "clicks", Key: []byte(fmt.Sprint(i)), Value: []byte(`{"budget":"a","value":` + v + `}`)})
	}
	env.produce(recs)
	w := env.startWorker(t, "w", MaxReward(5))
	env.waitCommitted("clicks")
	w.stop(t)
	out := 0
	for _, r := range env.readAll("dlq")["dlq"] {
		if reason, _ := pipeline.HeaderValue(r, pipeline.HeaderReason); reason == string(decode.ReasonRewardRange) {
			out++
		}
	}
	var got float64
	for _, st := range env.ledgers() {
		for _, r := range st.Reports {
			got += r.Total.Rewards
		}
	}
	if out != 3 || got != want {
		t.Fatalf("%d rewards dead-lettered as out of range (want 3), ledgers count %v rewards (want %v)", out, got, want)
	}
}
