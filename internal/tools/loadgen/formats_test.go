package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/schemaregistry"
)

// TestFormats registers each format's schema with an in-process registry,
// encodes events, and checks that throttler's decoder (through the
// registry) reads every field back, and Decode too.
func TestFormats(t *testing.T) {
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	src, err := schemaregistry.New([]string{srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, Config{Seed: 3, Users: 10, Budgets: abc()})
	for _, format := range []string{FormatJSON, FormatAvro, FormatProtobuf} {
		enc := Encoder{}
		if format != FormatJSON {
			if enc, err = Register(context.Background(), cl, "events-"+format+"-value", format); err != nil {
				t.Fatal(err)
			}
		}
		df, _ := decode.ParseFormat(format)
		d, err := decode.NewDecoder(decode.WithFormat(df), decode.WithSchemas(src), decode.BudgetPath("campaign"),
			decode.KeyPath("user"), decode.IDPath("id"), decode.ScorePath("score"), decode.TimePath("ts"))
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			e := g.Next(time.UnixMilli(1795341600000 + int64(g.Generated())))
			v := enc.Append(nil, &e)
			var got decode.Decoded
			if err := d.Decode(nil, v, time.Time{}, &got); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if err := d.Score(v, &got); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if got.Budget != e.Campaign || got.Key != e.User || got.ID != e.ID || got.Score != e.Score || !got.Time.Equal(e.Time) {
				t.Fatalf("%s: decoded %+v from %+v", format, got, e)
			}
			back, err := enc.Decode(v)
			if err != nil || back != e {
				t.Fatalf("%s: Decode %+v, %v; want %+v", format, back, err, e)
			}
		}
	}
	if _, err := Register(context.Background(), cl, "x", FormatJSON); err == nil {
		t.Error("registered a JSON schema")
	}
}
