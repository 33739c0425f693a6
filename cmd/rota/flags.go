package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// newFlagSet returns a flag set that reports errors instead of exiting, so every
// subcommand fails the same way: one line and exit status 2.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rota "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args; -h prints help and returns errHelp handled by the caller.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	return nil
}

var errHelp = errors.New("help requested")

// envOr returns the environment variable's value, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envInt is envOr for integers; a malformed value is reported when flags are checked.
func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		noteBadEnv(name, v, "is not a whole number")
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		noteBadEnv(name, v, "is not a duration (e.g. 30s)")
	}
	return def
}

// offDuration is a duration flag whose help gives a negative value a meaning ("negative
// disables"): besides every Go duration ("5s", "-1s", "0") it takes a bare negative whole
// number, the documented "-1", which time.ParseDuration refuses for want of a unit.
type offDuration time.Duration

func offDurationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	d := (*offDuration)(&def)
	fs.Var(d, name, usage)
	return (*time.Duration)(d)
}

func (d *offDuration) String() string { return time.Duration(*d).String() }

func (d *offDuration) Set(s string) error {
	v, err := parseOffDuration(s)
	if err != nil {
		return err
	}
	*d = offDuration(v)
	return nil
}

func parseOffDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	if n, err := strconv.Atoi(s); err == nil && n < 0 {
		return time.Duration(n), nil
	}
	return 0, errors.New("want a duration such as 5s, or a negative number such as -1")
}

// envOffDuration is envDuration for an offDuration flag's default.
func envOffDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := parseOffDuration(v); err == nil {
			return d
		}
		noteBadEnv(name, v, "is not a duration (e.g. 5s) nor a negative number (-1)")
	}
	return def
}

// envBool reads what strconv.ParseBool does (1, t, true, 0, f, false in any case), so
// that ROTA_METRICS_AUTH=1 is not silently false; anything else is reported like a
// malformed number.
func envBool(name string, def bool) bool {
	if v := os.Getenv(name); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
		noteBadEnv(name, v, "is not a boolean (true or false, 1 or 0)")
	}
	return def
}

// badEnv remembers the malformed environment defaults flags were registered with, so
// that they fail loudly, not silently: by variable, with the value found bad. Tests run
// commands concurrently in one process, so it is guarded, and checkEnv reports only the
// variables that still hold the value found bad (a later run with the variable fixed or
// unset is not blamed for an earlier one's).
var badEnv struct {
	sync.Mutex
	byName map[string][2]string // name -> {value, what is wrong with it}
}

func noteBadEnv(name, value, problem string) {
	badEnv.Lock()
	defer badEnv.Unlock()
	if badEnv.byName == nil {
		badEnv.byName = map[string][2]string{}
	}
	badEnv.byName[name] = [2]string{value, problem}
}

// envProblems lists the malformed variables still set as they were found, sorted.
func envProblems() []string {
	badEnv.Lock()
	defer badEnv.Unlock()
	var out []string
	for name, bad := range badEnv.byName {
		if os.Getenv(name) == bad[0] {
			out = append(out, fmt.Sprintf("%s=%q %s", name, bad[0], bad[1]))
		}
	}
	slices.Sort(out)
	return out
}

func checkEnv() error {
	if problems := envProblems(); len(problems) > 0 {
		return usagef("%s", strings.Join(problems, "; "))
	}
	return nil
}

// logFlags are shared by the long-running commands.
type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", envOr("ROTA_LOG_FORMAT", "text"), "log format: text or json (ROTA_LOG_FORMAT)")
	fs.StringVar(&l.level, "log-level", envOr("ROTA_LOG_LEVEL", "info"), "log level: debug, info, warn, error (ROTA_LOG_LEVEL)")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", l.format)
}

func databaseURLFlag(fs *flag.FlagSet) *string {
	return fs.String("database-url", os.Getenv("ROTA_DATABASE_URL"), "PostgreSQL URL (ROTA_DATABASE_URL)")
}
