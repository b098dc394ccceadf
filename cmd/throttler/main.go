// Command throttler is the Kafka-stream consumption throttle and A/B
// splitter: `throttler help` lists its commands.
//
// Exit codes: 0 success, 1 failure (or, for validate, problems found), 2 a
// bad command line (unknown command or flag, bad flag value), in which case
// nothing was started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/throttler/throttler/internal/buildinfo"
	"github.com/throttler/throttler/internal/logx"
)

// commands is the dispatch table. To add a command, write its command
// value in its own file and add it here, in the order `help` lists them.
// clock is the commands' clock (status reports as of its now); tests fix
// it.
var clock = time.Now

var commands = []*command{
	initCmd,
	brokerCmd,
	loadgenCmd,
	validateCmd,
	assignCmd,
	runCmd,
	demoCmd,
	simulateCmd,
	benchCmd,
	scaleCmd,
	statusCmd,
	dashboardCmd,
	budgetSetCmd,
	budgetDeleteCmd,
	budgetResetCmd,
	budgetListCmd,
	budgetImportCmd,
	budgetChurnCmd,
	ledgerShowCmd,
	ledgerRepairCmd,
	versionCmd,
	completionCmd,
}

// command is one subcommand.
type command struct {
	name    string // as typed: throttler <name>
	summary string // one line for `throttler help`
	doc     string // shown by `throttler <name> -h`, above the flags
	args    string // synopsis of positional arguments; "" means none allowed
	// complete lists the words its positional argument takes, for shell
	// completion; nil for none (or files, when args starts with FILE).
	complete []string
	// setup registers the command's flags and returns the action that runs
	// it once they are parsed.
	setup func(fs *flag.FlagSet) action
}

// action runs a command with its parsed flags.
type action func(ctx context.Context, e *env) error

// env is what an action gets besides its flags.
type env struct {
	stdout, stderr io.Writer
	log            zerolog.Logger // to stderr, per --log-format and --log-level
	args           []string       // positional arguments, when the command takes some
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a bad command line; dispatch prints it and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// badFlag reports a flag value that parsed but is not acceptable.
func badFlag(name, format string, args ...any) error {
	return &usageError{fmt.Sprintf("invalid value for flag --%s: %s", name, fmt.Sprintf(format, args...))}
}

// exitCode ends a command with a code, its message already printed.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process the default way
	}()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command line args (without the program name) and
// returns the exit code.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	if (name == "budget" || name == "ledger") && len(rest) > 0 { // two-word commands: budget set, ledger show, …
		name, rest = name+" "+rest[0], rest[1:]
	}
	switch name {
	case "help", "-h", "-help", "--help":
		return help(rest, stdout, stderr)
	case "-version", "--version":
		name = versionCmd.name
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "throttler: unknown command %q\nRun 'throttler help' for the list of commands.\n", name)
		return exitUsage
	}
	return cmd.run(ctx, rest, stdout, stderr)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// help prints the command list, or one command's usage.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 2 && (args[0] == "budget" || args[0] == "ledger") {
		args = []string{args[0] + " " + args[1]}
	}
	switch len(args) {
	case 0:
		printUsage(stdout)
		return exitOK
	case 1:
		if c := lookup(args[0]); c != nil {
			c.printUsage(stdout, c.flags().fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "throttler help: unknown command %q\nRun 'throttler help' for the list of commands.\n", args[0])
	default:
		fmt.Fprintln(stderr, "throttler help: takes at most one command name")
	}
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "throttler: a Kafka-stream consumption throttle and A/B splitter.\n\nUsage:\n  throttler <command> [flags]\n\nCommands:\n")
	width := len("help")
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "show this list, or a command's flags: throttler help <command>")
	fmt.Fprint(w, "\nRun 'throttler <command> --help' for a command's flags; every command takes --version.\n")
}

// cmdFlags is a command's flag set, with the logging and version flags
// every command shares, and the action to run once they are parsed.
type cmdFlags struct {
	fs            *flag.FlagSet
	act           action
	format, level *string
	version       *bool
}

func (c *command) flags() *cmdFlags {
	fs := flag.NewFlagSet("throttler "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // dispatch prints errors and usage itself
	f := &cmdFlags{fs: fs, act: c.setup(fs), format: new(string), level: new(string)}
	*f.format, *f.level = logx.DefaultFormat, logx.DefaultLevel
	fs.Func("log-format", "log `format`: json or console (default json)", func(s string) error {
		*f.format = s
		return logx.CheckFormat(s)
	})
	fs.Func("log-level", "log `level`: "+strings.Join(logx.Levels, ", ")+" (default info)", func(s string) error {
		*f.level = s
		_, err := logx.ParseLevel(s)
		return err
	})
	f.version = fs.Bool("version", false, "print the version of throttler and exit")
	return f
}

func (c *command) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := c.flags()
	fs := f.fs
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printUsage(stdout, fs)
			return exitOK
		}
		return c.usageFailure(stderr, err)
	}
	if *f.version {
		fmt.Fprint(stdout, buildinfo.Get())
		return exitOK
	}
	if c.args == "" && len(pos) > 0 {
		return c.usageFailure(stderr, fmt.Errorf("unexpected argument %q (this command takes flags only)", pos[0]))
	}
	log, err := logx.New(stderr, *f.format, *f.level)
	if err != nil { // checked while parsing; kept for safety
		return c.usageFailure(stderr, err)
	}
	log = log.With().Str("cmd", c.name).Logger()
	err = f.act(ctx, &env{stdout: stdout, stderr: stderr, log: log, args: pos})
	var code exitCode
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &usage):
		return c.usageFailure(stderr, err)
	}
	fmt.Fprintf(stderr, "throttler %s: %v\n", c.name, err)
	return exitFailure
}

func (c *command) usageFailure(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "throttler %s: %v\nRun 'throttler %s --help' for usage.\n", c.name, dashDash(err.Error()), c.name)
	return exitUsage
}

func (c *command) printUsage(w io.Writer, fs *flag.FlagSet) {
	synopsis := "[flags]"
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(w, "Usage: throttler %s %s\n\n%s\n\nFlags:\n", c.name, synopsis, strings.TrimSpace(c.doc))
	printFlags(w, fs)
}
