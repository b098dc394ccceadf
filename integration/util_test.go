package integration

import "github.com/tidwall/gjson"

// jsonField returns a string field of a JSON document.
func jsonField(doc []byte, path string) string { return gjson.GetBytes(doc, path).String() }
