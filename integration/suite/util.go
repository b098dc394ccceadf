package suite

import "github.com/tidwall/gjson"

// JsonField returns a string field of a JSON document.
func JsonField(doc []byte, path string) string { return gjson.GetBytes(doc, path).String() }
