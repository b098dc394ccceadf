package decode

import (
	"slices"
	"testing"
)

func TestSchemaPathsAvro(t *testing.T) {
	s := Schema{Format: FormatAvro, Text: `{"type":"record","name":"E","fields":[
 {"name":"id","type":"string"},
 {"name":"user","type":{"type":"record","name":"U","fields":[
   {"name":"id","type":["null","long"]},
   {"name":"tier","type":{"type":"enum","name":"T","symbols":["a","b"]}},
   {"name":"next","type":["null","U"]}]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"string"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"nothing","type":"null"}]}`}
	got, err := SchemaPaths(s, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "user.id", "user.tier", "ts"}
	if !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if got, _ := SchemaPaths(s, nil, 2); !slices.Equal(got, want[:2]) {
		t.Fatalf("max 2: %q", got)
	}
}

func TestSchemaPathsProtobuf(t *testing.T) {
	s := Schema{Format: FormatProtobuf, Text: `syntax = "proto3";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message First { string a = 1; }
message Event {
  string id = 1;
  message User { int64 id = 1; User parent = 2; }
  User user = 2;
  google.protobuf.Timestamp at = 3;
  google.protobuf.DoubleValue bid = 4;
  repeated string tags = 5;
  map<string, string> attrs = 6;
  oneof pick { string x = 7; int32 y = 8; }
}`}
	got, err := SchemaPaths(s, []int{1}, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "user.id", "at", "bid", "x", "y"}
	if !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if got, err := SchemaPaths(s, nil, 100); err != nil || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first message: %q %v", got, err)
	}
	if _, err := SchemaPaths(s, []int{5}, 100); err == nil {
		t.Fatal("index 5: no error")
	}
	if _, err := SchemaPaths(Schema{Format: FormatJSON}, nil, 100); err == nil {
		t.Fatal("json: no error")
	}
}
