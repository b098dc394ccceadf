package bench

import (
	"context"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/throttler/throttler/decode"
	"github.com/throttler/throttler/internal/schemaregistry"
	"github.com/throttler/throttler/internal/tools/loadgen"
)

// setupFormat prepares the input's format: for Avro and Protobuf, a
// registry in the process, the schema registered, the encoder of the
// input and the pipeline decoder's options (its source fetches the
// schema once, in the first round's first records). stop closes the
// registry.
func (r *runner) setupFormat(ctx context.Context) (stop func(), err error) {
	f, _ := decode.ParseFormat(r.c.Format) // checked by defaults
	if !f.Framed() {
		return func() {}, nil
	}
	srv, err := schemaregistry.StartServer("127.0.0.1:0")
	if err != nil {
		return func() {}, err
	}
	cl, err := sr.NewClient(sr.URLs(srv.URL()))
	if err != nil {
		return srv.Close, err
	}
	if r.enc, err = loadgen.Register(ctx, cl, r.input()+"-value", r.c.Format); err != nil {
		return srv.Close, err
	}
	src, err := schemaregistry.New([]string{srv.URL()})
	if err != nil {
		return srv.Close, err
	}
	r.decOpts = []decode.Opt{decode.WithFormat(f), decode.WithSchemas(src)}
	return srv.Close, nil
}
