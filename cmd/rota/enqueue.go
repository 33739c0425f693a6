package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

func runEnqueue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("enqueue", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota enqueue <kind> [flags]")
		fmt.Fprintln(fs.Output(), "Creates a task and prints it. With --wait, waits until it is finished and exits 1 unless it SUCCEEDED.")
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	payload := fs.String("payload", "", "task payload as JSON (default {})")
	payloadFile := fs.String("payload-file", "", "read the JSON payload from this file ('-' = standard input)")
	queue := fs.String("queue", "", "queue to put the task in (default \"default\")")
	delay := fs.Duration("delay", 0, "run no earlier than this long from now, e.g. 10s (rounded up to whole seconds)")
	at := fs.String("at", "", "run no earlier than this time (RFC 3339, e.g. 2030-01-02T15:04:05Z)")
	maxAttempts := fs.Int("max-attempts", 0, "attempts before the task is DEAD (0 = the server's default, "+strconv.Itoa(store.DefaultMaxAttempts)+")")
	priority := fs.Int("priority", 0, "higher runs first among due tasks")
	idemKey := fs.String("idempotency-key", "", "if a live or succeeded task has this key, return it instead of creating one")
	groupKey := fs.String("group-key", "", "put the task in this group of its queue (at most "+strconv.Itoa(store.MaxGroupKeyLength)+" characters): the queue's group limits count per key, and claims take groups in turn")
	timeoutSeconds := fs.Int("timeout-seconds", 0, "time limit of each handler attempt in seconds (0 = the worker's default for the kind, else "+runtime.DefaultAttemptTimeout.String()+")")
	wait := fs.Bool("wait", false, "wait until the task is finished; exit 1 unless it SUCCEEDED")
	waitTimeout := fs.Duration("wait-timeout", defaultWaitTimeout, "with --wait: give up after this long and exit 1 (0 = wait as long as it takes)")

	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	switch len(pos) {
	case 0:
		return usagef("enqueue needs a task kind, e.g. rota enqueue noop")
	case 1:
	default:
		return usagef("enqueue: unexpected argument %q (flags go before or after the kind)", pos[1])
	}
	req := apiclient.CreateTask{
		Kind:           pos[0],
		Queue:          *queue,
		MaxAttempts:    *maxAttempts,
		Priority:       *priority,
		IdempotencyKey: *idemKey,
		TimeoutSeconds: *timeoutSeconds,
		GroupKey:       *groupKey,
	}
	if err := store.ValidateName("kind", req.Kind); err != nil {
		return usagef("enqueue: %v", err)
	}
	if set["queue"] {
		if err := store.ValidateName("queue", req.Queue); err != nil {
			return usagef("--queue: %v", err)
		}
	}
	if err := store.ValidateGroupKey(req.GroupKey); err != nil {
		return usagef("--group-key: %s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}

	switch {
	case set["payload"] && set["payload-file"]:
		return usagef("give --payload or --payload-file, not both")
	case set["payload"]:
		req.Payload = json.RawMessage(*payload)
	case set["payload-file"]:
		b, err := readPayloadFile(*payloadFile)
		if err != nil {
			return err
		}
		req.Payload = b
	}
	if req.Payload != nil && !json.Valid(req.Payload) {
		return usagef("the payload is not valid JSON: %s", truncate(oneLine(string(req.Payload)), 80))
	}

	switch {
	case set["delay"] && set["at"]:
		return usagef("give --delay or --at, not both")
	case *delay < 0:
		return usagef("--delay %s: must not be negative", *delay)
	case *delay > 0:
		// The database counts the delay from its own clock (DESIGN.md section 9), so
		// neither this machine's clock nor the server's matters; whole seconds.
		req.DelaySeconds = int((*delay + time.Second - 1) / time.Second)
	case set["at"]:
		t, err := parseAt(*at)
		if err != nil {
			return err
		}
		req.ScheduledFor = &t
	}
	if *maxAttempts < 0 {
		return usagef("--max-attempts must be 0 (the default) or more")
	}
	if *timeoutSeconds < 0 {
		return usagef("--timeout-seconds must be 0 (the default) or more")
	}
	if *waitTimeout < 0 {
		return usagef("--wait-timeout must be 0 or more")
	}
	if set["wait-timeout"] && !*wait {
		return usagef("--wait-timeout needs --wait")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}

	task, created, err := c.CreateTask(ctx, req)
	if err != nil {
		return cf.explain(err)
	}
	if !created {
		fmt.Fprintf(stderr, "rota: idempotency key %q names an existing task; nothing was created\n", req.IdempotencyKey)
	}
	for _, w := range task.Warnings { // the task was created; nothing may run it yet
		fmt.Fprintln(stderr, "rota: warning:", w)
	}
	if !*wait {
		return printTask(stdout, cf.json, task)
	}

	limit := "as long as it takes"
	if *waitTimeout > 0 {
		limit = "at most --wait-timeout " + waitTimeout.String()
	}
	fmt.Fprintf(stderr, "rota: enqueued %s, waiting for it to finish (%s)...\n", task.ID, limit)
	final, err := waitForTask(ctx, c, task, *waitTimeout, stderr)
	if err != nil {
		return cf.explain(err)
	}
	if err := printTask(stdout, cf.json, final); err != nil {
		return err
	}
	if final.Status != "SUCCEEDED" {
		msg := fmt.Sprintf("task %s finished %s", final.ID, final.Status)
		if final.LastError != "" {
			msg += ": " + truncate(oneLine(final.LastError), 200)
		}
		return errors.New(msg)
	}
	return nil
}

// readPayloadFile reads a payload from a file or, for "-", standard input.
func readPayloadFile(name string) ([]byte, error) {
	if name == "" {
		return nil, usagef("--payload-file needs a file name ('-' = standard input)")
	}
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, store.MaxPayloadBytes+1))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usagef("--payload-file: %v", err)
	}
	if len(b) > store.MaxPayloadBytes {
		return nil, usagef("--payload-file %s: the payload is larger than %d bytes", name, store.MaxPayloadBytes)
	}
	return b, nil
}

// defaultWaitTimeout bounds `enqueue --wait`: a task in a queue no worker serves would
// otherwise block a script forever.
const defaultWaitTimeout = 5 * time.Minute

// waitNoticeInterval is how often a wait says on stderr why it is still waiting.
var waitNoticeInterval = 10 * time.Second

// waitForTask polls until the task is terminal, checking often at first and then about
// once a second, and every waitNoticeInterval tells stderr why it is still waiting. A
// limit of 0 waits until ctx ends.
func waitForTask(ctx context.Context, c *apiclient.Client, task *apiclient.Task, limit time.Duration, stderr io.Writer) (*apiclient.Task, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	start := time.Now()
	lastNotice := start
	interval := 50 * time.Millisecond
	for !task.Terminal() {
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && limit > 0 {
				return nil, fmt.Errorf("task %s is still %s after --wait-timeout %s: %s", task.ID, task.Status, limit, waitingReason(task, time.Now()))
			}
			return nil, fmt.Errorf("stopped waiting for task %s (still %s): %w", task.ID, task.Status, ctx.Err())
		case <-timer.C:
		}
		next, err := c.GetTask(ctx, task.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue // reported by the select above
			}
			return nil, err
		}
		task = next
		if now := time.Now(); !task.Terminal() && now.Sub(lastNotice) >= waitNoticeInterval {
			lastNotice = now
			fmt.Fprintf(stderr, "rota: still %s after %s: %s\n", task.Status, now.Sub(start).Round(time.Second), waitingReason(task, now))
		}
		if interval < time.Second {
			interval = min(interval*2, time.Second)
		}
	}
	return task, nil
}

// waitingReason says, from a task's row, what it is waiting for and what may be wrong.
func waitingReason(t *apiclient.Task, now time.Time) string {
	var failed string
	if t.AttemptCount > 0 && t.LastError != "" {
		failed = fmt.Sprintf("attempt %d of %d failed (%s); ", t.AttemptCount, t.MaxAttempts, truncate(oneLine(t.LastError), 120))
	}
	switch t.Status {
	case "PENDING":
		if t.ScheduledFor.After(now) {
			return failed + "it is due at " + fmtTime(&t.ScheduledFor)
		}
		return failed + fmt.Sprintf("no worker has claimed it; is a worker serving queue %q with a handler for kind %q?", t.Queue, t.Kind)
	case "ENQUEUED":
		return failed + fmt.Sprintf("its id was sent to SQS but no worker has claimed it; is a worker in --mode sqs serving queue %q?", t.Queue)
	case "PROCESSING":
		return fmt.Sprintf("running on worker %s (attempt %d of %d)", dash(t.WorkerID), t.AttemptCount, t.MaxAttempts)
	}
	return "status " + t.Status
}
