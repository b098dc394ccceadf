package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
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

// parseArgs parses args with fs, flags and positional arguments in any
// order (`validate FILE --log-level warn` as well as `validate --log-level
// warn FILE`), as users of kubectl or rpk expect; the standard library
// stops at the first positional argument. Everything after "--" is
// positional. It returns the positional arguments in their order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// printFlags prints the flags of fs as the standard library does, each
// spelt with two dashes, as the docs spell them (both spellings work).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok { // a flag's line; its usage lines start with a tab
			line = "  --" + rest
		}
		fmt.Fprint(w, line)
	}
}

// flagInError finds a flag name in the standard library's parse errors
// ("flag provided but not defined: -x", "invalid value … for flag -x",
// "flag needs an argument: -x", "invalid boolean value … for -x").
var flagInError = regexp.MustCompile(`(defined: |flag |argument: |for )-([A-Za-z])`)

// dashDash spells the flags of a parse error with two dashes.
func dashDash(msg string) string { return flagInError.ReplaceAllString(msg, "$1--$2") }

// fileArg returns the one file a command reads, given with its flag
// (value, "" when unset) or else as the first positional argument, and
// the other positional arguments. Neither is a usage error.
func fileArg(name, value string, args []string) (string, []string, error) {
	switch {
	case value != "":
		return value, args, nil
	case len(args) == 0:
		return "", nil, &usageError{fmt.Sprintf("no file: give it as the first argument (or with --%s)", name)}
	}
	return args[0], args[1:], nil
}

// oneFile is fileArg for a command that takes nothing but the file.
func oneFile(name, value string, args []string) (string, error) {
	path, rest, err := fileArg(name, value, args)
	if err == nil && len(rest) > 0 {
		err = &usageError{fmt.Sprintf("unexpected argument %q (this command takes one file)", rest[0])}
	}
	return path, err
}
