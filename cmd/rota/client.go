package main

// Shared pieces of the client commands (enqueue, tasks, dead-letters): the flags that
// say which server to talk to and how to print, and the output helpers.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/validate"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server  string
	token   string
	json    bool
	timeout time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", defaultServer(), "Rota server URL (ROTA_SERVER, else http:// + ROTA_ADDR)")
	fs.StringVar(&c.token, "token", os.Getenv("ROTA_API_TOKEN"), "API bearer token (ROTA_API_TOKEN)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of tables (for scripts)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "time limit for each HTTP request (0 = none)")
}

// defaultServer is ROTA_SERVER, else the address `rota serve` listens on by default.
func defaultServer() string {
	if s := os.Getenv("ROTA_SERVER"); s != "" {
		return s
	}
	if addr := os.Getenv("ROTA_ADDR"); addr != "" {
		return "http://" + dialableAddr(addr)
	}
	return "http://127.0.0.1:8080"
}

// dialableAddr turns a listen address into one a client can dial: ":8080" and
// "0.0.0.0:8080" listen on every interface, so the client uses loopback.
func dialableAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// client checks the flags and returns an API client.
func (c *clientFlags) client() (*apiclient.Client, error) {
	if c.timeout < 0 {
		return nil, usagef("--timeout must be 0 or more")
	}
	token, err := validate.Token(c.token)
	if err != nil {
		return nil, usagef("--token (ROTA_API_TOKEN): %v", err)
	}
	c.token = token
	base, err := normalizeServer(c.server)
	if err != nil {
		return nil, err
	}
	return apiclient.New(base, c.token, &http.Client{Timeout: c.timeout}), nil
}

// normalizeServer accepts "host:port" as well as a full URL and checks what it gets.
func normalizeServer(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", usagef("--server is empty: give the server's URL, e.g. http://127.0.0.1:8080")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", usagef("--server %q is not a URL: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", usagef("--server %q: the scheme must be http or https", s)
	}
	if u.Host == "" {
		return "", usagef("--server %q has no host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", usagef("--server %q: give the server's base URL, without a query", s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// explain adds what to do about errors the user can fix from the command line.
func (c *clientFlags) explain(err error) error {
	if errors.Is(err, apiclient.ErrNotAPI) {
		return fmt.Errorf("%w; is --server the Rota server's base URL?", err)
	}
	if apiclient.IsUnauthorized(err) {
		if c.token == "" {
			return fmt.Errorf("%w (the server needs an API token: pass --token or set ROTA_API_TOKEN)", err)
		}
		return fmt.Errorf("%w (the server refused the token from --token or ROTA_API_TOKEN)", err)
	}
	return err
}

// parseArgs parses flags that may come before, between or after the positional
// arguments (`rota tasks get ID --json`), which flag.Parse alone does not allow.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			// Everything after "--" is positional.
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// subcommand is one action of a command group (`tasks list`, `dead-letters replay`).
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// runGroup dispatches `rota <group> <action> ...`.
func runGroup(ctx context.Context, group string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: rota %s <action> [flags]\n\n", group)
		for _, s := range subs {
			fmt.Fprintf(w, "  %-10s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(w, "\nRun 'rota %s <action> -h' for an action's flags.\n", group)
	}
	names := make([]string, 0, len(subs))
	for _, s := range subs {
		names = append(names, s.name)
	}
	if len(args) == 0 {
		return usagef("%s needs an action: %s (see 'rota %s -h')", group, strings.Join(names, ", "), group)
	}
	if isHelpArg(args[0]) {
		usage(stdout)
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		return usagef("%s: give the action (%s) before the flags", group, strings.Join(names, ", "))
	}
	return usagef("%s: unknown action %q (want %s)", group, args[0], strings.Join(names, ", "))
}

// taskIDArg checks the one task id an action takes.
func taskIDArg(action string, args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", usagef("%s needs a task id", action)
	case 1:
	default:
		return "", usagef("%s: unexpected argument %q (give one task id)", action, args[1])
	}
	return parseTaskID(action, args[0])
}

func parseTaskID(what, s string) (string, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", usagef("%s: %q is not a task id (a UUID)", what, s)
	}
	return id.String(), nil
}

// validStatuses are the task statuses, in lifecycle order.
var validStatuses = []string{"PENDING", "ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "DEAD", "CANCELED"}

// parseStatuses reads "dead,failed" into upper-case statuses, rejecting unknown ones.
func parseStatuses(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.ToUpper(strings.TrimSpace(part))
		if part == "" {
			continue
		}
		ok := false
		for _, v := range validStatuses {
			ok = ok || v == part
		}
		if !ok {
			return nil, usagef("--status %q: want one or more of %s", part, strings.Join(validStatuses, ", "))
		}
		out = append(out, part)
	}
	return out, nil
}

// parseReason reads a dead-letter reason: "", DEAD or FAILED (any case).
func parseReason(s string) (string, error) {
	r := strings.ToUpper(strings.TrimSpace(s))
	if r != "" && r != "DEAD" && r != "FAILED" {
		return "", usagef("--reason %q: want DEAD or FAILED", s)
	}
	return r, nil
}

func checkLimit(limit int) error {
	if limit < 0 || limit > 1000 {
		return usagef("--limit %d: want 1 to 1000 (0 = the server's default)", limit)
	}
	return nil
}

// parseAt reads an --at time (RFC 3339, in UTC). A time before 1970 is refused as the
// server refuses it: it is most likely a zero value.
func parseAt(raw string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, usagef("--at %q: want an RFC 3339 time such as 2030-01-02T15:04:05Z", raw)
	}
	if t.Before(store.EarliestTime) {
		return time.Time{}, usagef("--at %q: before 1970-01-01T00:00:00Z; give a later time", raw)
	}
	return t.UTC(), nil
}

// checkFilters checks --queue and --kind as the server does: a value that is not a name
// matches nothing, so it is a usage error found before any request.
func checkFilters(queue, kind string) error {
	for _, f := range []struct{ name, value string }{{"queue", queue}, {"kind", kind}} {
		if err := store.ValidateFilter(f.name, f.value); err != nil {
			return usagef("--%s: %v", f.name, err)
		}
	}
	return nil
}

// writeJSON prints v as indented JSON followed by a newline.
// listPages reads one page with next, or, with all, every page until the last: next
// reads the page after the one it read before and returns its items and the cursor of the
// page after it. It returns the items in order and the cursor left after the last page
// read ("" when there is none).
func listPages[T any](all bool, next func() ([]T, string, error)) ([]T, string, error) {
	var items []T
	for {
		page, cursor, err := next()
		if err != nil {
			return nil, "", err
		}
		items = append(items, page...)
		if !all || cursor == "" {
			return items, cursor, nil
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// rawOrMarshal is a decoded object's exact server JSON, so --json output keeps fields
// this client does not know about.
func rawOrMarshal(raw json.RawMessage, v any) json.RawMessage {
	if len(raw) > 0 {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

func rawTasks(tasks []apiclient.Task) []json.RawMessage {
	out := make([]json.RawMessage, len(tasks))
	for i := range tasks {
		out[i] = rawOrMarshal(tasks[i].Raw(), tasks[i])
	}
	return out
}

// printTask prints one task, field per line, or its JSON.
func printTask(w io.Writer, asJSON bool, t *apiclient.Task) error {
	if asJSON {
		return writeJSON(w, rawOrMarshal(t.Raw(), t))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", t.ID)
	row("status", t.Status)
	row("queue", t.Queue)
	row("kind", t.Kind)
	row("payload", string(t.Payload))
	row("priority", fmt.Sprint(t.Priority))
	row("attempts", fmt.Sprintf("%d of %d", t.AttemptCount, t.MaxAttempts))
	row("scheduled_for", fmtTime(&t.ScheduledFor))
	row("idempotency_key", t.IdempotencyKey)
	row("group_key", t.GroupKey)
	if t.TimeoutSeconds > 0 {
		row("timeout_seconds", fmt.Sprint(t.TimeoutSeconds))
	}
	row("worker_id", t.WorkerID)
	row("lease_expires_at", fmtTime(t.LeaseExpiresAt))
	row("cancel_requested_at", fmtTime(t.CancelRequestedAt))
	row("enqueued_at", fmtTime(t.EnqueuedAt))
	row("processing_started_at", fmtTime(t.ProcessingStartedAt))
	row("completed_at", fmtTime(t.CompletedAt))
	row("last_error", oneLine(t.LastError))
	if len(t.Output) > 0 && string(t.Output) != "null" {
		row("output", truncate(oneLine(string(t.Output)), 200))
	}
	row("flow_id", t.FlowID)
	row("step", t.Step)
	if t.Index != nil {
		row("index", fmt.Sprint(*t.Index))
		row("item", truncate(oneLine(string(t.Item)), 200))
	}
	row("created_at", fmtTime(&t.CreatedAt))
	row("updated_at", fmtTime(&t.UpdatedAt))
	return tw.Flush()
}

// printTaskTable prints tasks one per line.
func printTaskTable(w io.Writer, tasks []apiclient.Task) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tQUEUE\tKIND\tATTEMPTS\tPRIORITY\tSCHEDULED_FOR\tUPDATED_AT\tLAST_ERROR")
	for i := range tasks {
		t := &tasks[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\n", t.ID, t.Status, t.Queue, t.Kind,
			t.AttemptCount, t.MaxAttempts, t.Priority, fmtTime(&t.ScheduledFor), fmtTime(&t.UpdatedAt),
			dash(truncate(oneLine(t.LastError), 60)))
	}
	return tw.Flush()
}

// fmtTime prints a time as RFC 3339 UTC to the second; "" for nil or zero.
func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
