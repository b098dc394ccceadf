package config

import (
	"reflect"
	"strings"
)

// suggest returns the yaml key of struct t that an unknown key most
// likely misspells, or "" when none is close: the known key at the
// smallest edit distance (letters added, removed, changed or swapped with
// their neighbour; case ignored), if that distance is at most a third of
// the key's length (at least 1, at most 3). Ties go to the field declared
// first.
func suggest(key string, t reflect.Type) string {
	limit := min(max(len(key)/3, 1), 3)
	best, bestD := "", limit+1
	for _, k := range yamlKeys(t) {
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// yamlKeys returns the yaml keys of struct t's exported fields, those of
// inlined structs included, in declaration order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			keys = append(keys, yamlKeys(f.Type)...)
		case name != "" && name != "-":
			keys = append(keys, name)
		}
	}
	return keys
}

// editDistance is the optimal string alignment distance between a and b
// (in bytes): the fewest insertions, deletions, substitutions and swaps
// of adjacent letters that turn a into b. It costs O(len(a)·len(b)); keys
// are short.
func editDistance(a, b string) int {
	// Three rows of the table: i-2, i-1 and i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
