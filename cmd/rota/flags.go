package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// newFlagSet returns a flag set that reports errors instead of exiting, so every
// subcommand fails the same way: one line and exit status 2. help is where -h prints
// the usage (stdout: asking for help is no error).
func newFlagSet(name string, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rota "+name, flag.ContinueOnError)
	fs.SetOutput(help)
	return fs
}

// parseFlags parses args; -h prints help and returns errHelp handled by the caller. A
// bad flag is one line (flag would also print it and the whole usage, and main the error
// again), with a suggestion when the flag looks like a known one.
func parseFlags(fs *flag.FlagSet, args []string) error {
	hideSecretDefaults(fs)
	help := fs.Output()
	var printed bytes.Buffer
	fs.SetOutput(&printed)
	err := fs.Parse(args)
	fs.SetOutput(help)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = help.Write(printed.Bytes())
			return errHelp
		}
		return flagError(fs, err)
	}
	return nil
}

// flagError turns flag's error into one usage line naming the command.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		if s := suggestFlag(fs, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usagef("%s: %s (see '%s -h')", strings.TrimPrefix(fs.Name(), "rota "), msg, fs.Name())
}

// suggestFlag is the defined flag nearest to name by edit distance, when it is near
// enough to be a likely typo; "" otherwise.
func suggestFlag(fs *flag.FlagSet, name string) string {
	best, bestDist := "", 0
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if best == "" || d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" || bestDist > max(2, len(name)/3) || bestDist >= len(name) {
		return ""
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b: insertions,
// deletions, substitutions and swaps of neighbours ("--wiat") each count one. Bytes:
// flag names are ASCII.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// secretFlags are the flags whose default may come from the environment and must not
// be printed by -h as it is.
var secretFlags = map[string]bool{"token": true, "database-url": true, "db-listen-url": true}

// hideSecretDefaults masks what -h would print of a secret default: the token, and the
// password in a database URL (its host and database stay, to tell which one is used).
func hideSecretDefaults(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if !secretFlags[f.Name] || f.DefValue == "" {
			return
		}
		if u, err := url.Parse(f.DefValue); err == nil && u.Scheme != "" && f.Name != "token" {
			f.DefValue = u.Redacted()
			return
		}
		f.DefValue = "(set, hidden)"
	})
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
