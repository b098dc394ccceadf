package decode

import (
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SchemaPaths returns the field paths a decoder can read in records of
// schema s, in schema order: every single value (string, number,
// boolean, enum, bytes, fixed; in Protobuf also a Timestamp or a wrapper)
// reached through records or messages, not through lists or maps. index
// is the Protobuf message index of the records (nil: the first message);
// Avro ignores it. It returns at most max paths (a recursive type is
// followed once on each path); those paths are what `throttler init`
// reads in sampled records.
func SchemaPaths(s Schema, index []int, max int) ([]string, error) {
	w := pathWalk{max: max, seen: map[string]bool{}}
	switch s.Format {
	case FormatAvro:
		sch, err := parseAvro(s)
		if err != nil {
			return nil, err
		}
		w.avro(sch, "", map[string]bool{})
	case FormatProtobuf:
		ps, err := compileProtoSchema(s)
		if err != nil {
			return nil, err
		}
		msgs := ps.file.Messages()
		if len(index) == 0 {
			index = []int{0}
		}
		var md protoreflect.MessageDescriptor
		for _, i := range index {
			if i < 0 || i >= msgs.Len() {
				return nil, fmt.Errorf("no message at index %v", index)
			}
			md = msgs.Get(i)
			msgs = md.Messages()
		}
		w.proto(md, "", map[protoreflect.FullName]bool{})
	default:
		return nil, errors.New("schema paths: want an avro or protobuf schema")
	}
	return w.paths, nil
}

// pathWalk collects the paths of a schema.
type pathWalk struct {
	max   int
	paths []string
	seen  map[string]bool
}

func (w *pathWalk) add(p string) {
	if len(w.paths) < w.max && !w.seen[p] {
		w.seen[p] = true
		w.paths = append(w.paths, p)
	}
}

func under(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// avro walks s at path p; open holds the named records on the way.
func (w *pathWalk) avro(s avro.Schema, p string, open map[string]bool) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		if open[s.FullName()] {
			return
		}
		open[s.FullName()] = true
		for _, f := range s.Fields() {
			w.avro(f.Type(), under(p, f.Name()), open)
		}
		delete(open, s.FullName())
	case *avro.UnionSchema: // a union is its branches, at the same path
		for _, b := range s.Types() {
			w.avro(b, p, open)
		}
	case *avro.PrimitiveSchema, *avro.EnumSchema, *avro.FixedSchema:
		if s.Type() != avro.Null && p != "" {
			w.add(p)
		}
	} // null, arrays and maps hold no path
}

// proto walks md at path p; open holds the messages on the way.
func (w *pathWalk) proto(md protoreflect.MessageDescriptor, p string, open map[protoreflect.FullName]bool) {
	if open[md.FullName()] {
		return
	}
	open[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		fp := under(p, string(fd.Name()))
		switch {
		case fd.IsList() || fd.IsMap():
		case fd.Kind() != protoreflect.MessageKind:
			w.add(fp)
		case fd.Message().FullName() == "google.protobuf.Timestamp" || wrappers[fd.Message().FullName()]:
			w.add(fp)
		default:
			w.proto(fd.Message(), fp, open)
		}
	}
	delete(open, md.FullName())
}
