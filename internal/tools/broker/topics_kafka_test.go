package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/throttler/throttler/internal/testsupport/kafkabroker"
)

// On Apache Kafka, a topic CreateTopics made takes records at once: a
// producer that fails a record at its first UNKNOWN_TOPIC_OR_PARTITION
// writes to each new topic right after its creation. (Kafka lists a new
// topic a moment after it answers the creation; `throttler loadgen`
// failed so.)
func TestCreateTopicsOnKafkaReturnsOnceListed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	b := kafkabroker.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for i := range 10 {
		topic := fmt.Sprintf("new-%d", i)
		if err := CreateTopics(ctx, kadm.NewClient(adm), 12, nil, topic); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.UnknownTopicRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatalf("producing to %s right after its creation: %v", topic, err)
		}
	}
}
