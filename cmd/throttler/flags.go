package main

import (
	"errors"
	"flag"
	"strings"
)

// listFlag registers a comma-separated list flag on fs.
func listFlag(fs *flag.FlagSet, name string, value []string, usage string) *[]string {
	list := &value
	fs.Func(name, usage, func(s string) error {
		var out []string
		for _, item := range strings.Split(s, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				return errors.New("empty item in comma-separated list")
			}
			out = append(out, item)
		}
		*list = out
		return nil
	})
	return list
}
