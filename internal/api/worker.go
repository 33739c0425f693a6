package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// The worker protocol: claim, heartbeat, complete, fail. Every write after a claim names
// the lease token the claim returned, and the store fences it (ErrLeaseLost -> 409).

func (s *Server) claim(w http.ResponseWriter, r *http.Request) error {
	queue := r.PathValue("queue")
	if err := store.ValidateName("queue", queue); err != nil {
		return err
	}
	var req claimRequest
	err := s.decodeJSON(w, r, &req)
	if err != nil {
		return err
	}
	p := store.ClaimParams{Queue: queue, Limit: 1}
	if p.WorkerID, err = checkWorkerID(req.WorkerID); err != nil {
		return err
	}
	if req.Limit != nil {
		if *req.Limit < 1 || *req.Limit > maxClaimLimit {
			return invalidRequest(fmt.Sprintf("limit must be between 1 and %d, got %d", maxClaimLimit, *req.Limit))
		}
		p.Limit = *req.Limit
	}
	if p.LeaseDuration, err = leaseSeconds(req.LeaseSeconds); err != nil {
		return err
	}
	s.registerHTTPWorker(r, p.WorkerID, queue)
	var wait time.Duration
	if req.WaitSeconds != nil {
		if *req.WaitSeconds < 0 || *req.WaitSeconds > maxWaitSeconds {
			return invalidRequest(fmt.Sprintf("wait_seconds must be between 0 and %d, got %v", maxWaitSeconds, *req.WaitSeconds))
		}
		wait = time.Duration(*req.WaitSeconds * float64(time.Second))
	}
	tasks, err := s.claimOrWait(r, p, wait)
	if err != nil {
		if err == errTooManyLongPolls {
			w.Header().Set("Retry-After", "1")
		}
		return err
	}
	out := tasksJSON{Tasks: make([]taskJSON, len(tasks))}
	for i, t := range tasks {
		out.Tasks[i] = claimedTaskOut(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// errTooManyLongPolls answers a claim that would wait when MaxLongPolls claims already
// do. Retry-After tells well-behaved clients when to come back.
var errTooManyLongPolls = &apiError{http.StatusServiceUnavailable, codeUnavailable,
	"too many claims are waiting; retry in a second"}

// claimOrWait claims; when nothing is due and wait > 0, it waits for a wake-up of the
// queue (a task inserted there) or the next poll tick and claims again, until it has
// tasks, the wait is over, the client has gone or the server closes.
//
// The wake-up subscription is taken before the first claim: a task inserted between an
// empty claim and the subscription would otherwise wait for the poll tick.
//
// A client that disconnects just after a claim succeeded loses its answer; the tasks'
// leases then expire and the reaper returns them (the attempt counts), as for any worker
// that dies holding a task.
func (s *Server) claimOrWait(r *http.Request, p store.ClaimParams, wait time.Duration) ([]*store.Task, error) {
	ctx := r.Context()
	if wait <= 0 {
		return s.claimWaiting(ctx, p)
	}
	deadline := s.cfg.Now().Add(wait)
	wake, unsubscribe := s.waker.subscribe(p.Queue)
	defer unsubscribe()

	tasks, err := s.claimWaiting(ctx, p)
	if err != nil || len(tasks) > 0 {
		return tasks, err
	}
	select {
	case s.longPolls <- struct{}{}:
		defer func() { <-s.longPolls }()
	default:
		return nil, errTooManyLongPolls
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		remaining := deadline.Sub(s.cfg.Now())
		if remaining <= 0 {
			return tasks, nil
		}
		timer.Reset(min(remaining, s.pollDelay()))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.waker.ctx.Done(): // the server is closing: answer with nothing
			return tasks, nil
		case <-wake:
		case <-timer.C:
		}
		// Claim even when the wait just ended: a wake-up or tick may have raced the
		// deadline, and the claim is what the client waited for.
		if tasks, err = s.claimWaiting(ctx, p); err != nil || len(tasks) > 0 {
			return tasks, err
		}
	}
}

// pollDelay is LongPollInterval with ±20% jitter, so that many waiting workers do not
// poll the store in lockstep.
func (s *Server) pollDelay() time.Duration {
	d := s.cfg.LongPollInterval
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	var req heartbeatRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	p := store.HeartbeatParams{TaskID: id}
	if p.LeaseToken, err = parseLeaseToken(req.LeaseToken); err != nil {
		return err
	}
	if p.LeaseDuration, err = leaseSeconds(req.LeaseSeconds); err != nil {
		return err
	}
	t, err := s.cfg.Store.Heartbeat(r.Context(), p)
	if err != nil {
		return err
	}
	// A worker busy with a long task claims nothing meanwhile: its heartbeats keep it
	// listed as live.
	s.registerHTTPWorker(r, t.WorkerID, t.Queue)
	writeJSON(w, http.StatusOK, taskOut(t))
	return nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	// A 1 MiB output must fit whatever limit the other routes have.
	body, err := readBody(w, r, max(s.cfg.MaxBodyBytes, completeBodyBytes), false)
	if err != nil {
		return err
	}
	var req completeRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	token, err := parseLeaseToken(req.LeaseToken)
	if err != nil {
		return err
	}
	output, err := completeOutput(req.Output)
	if err != nil {
		return err
	}
	return s.recordOutcome(w, r, store.Outcome{TaskID: id, LeaseToken: token, Kind: store.Succeed, Output: output})
}

// completeOutput is a complete's output as the store takes it: compacted (the limit
// counts the JSON, not the client's indentation), and 413 payload_too_large when it is
// still larger than store.MaxOutputBytes, before anything is written. The store checks
// the rest (storable JSON) and answers ErrInvalid (400).
func completeOutput(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalidJSON(fmt.Sprintf("output: %v", err)) // unreachable: the decoder checked it
	}
	if buf.Len() > store.MaxOutputBytes {
		return nil, &apiError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
			fmt.Sprintf("output is %d bytes of JSON, more than the %d allowed", buf.Len(), store.MaxOutputBytes)}
	}
	return buf.Bytes(), nil
}

// fail records a failed attempt: retryable (the default) goes back to the queue after
// retry_after_seconds or the server's backoff, or DEAD when no attempts remain; not
// retryable is FAILED. When a cancel was requested the store records CANCELED instead.
// The delay goes to the store as a duration, added to the database's now(), not to this
// server's clock.
func (s *Server) fail(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	var req failRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	o := store.Outcome{TaskID: id, Kind: store.Retry}
	if o.LeaseToken, err = parseLeaseToken(req.LeaseToken); err != nil {
		return err
	}
	if req.Error == nil || *req.Error == "" {
		return invalidRequest("error is required: say why the attempt failed")
	}
	o.Error = cleanErrorMessage(*req.Error)
	retryable := req.Retryable == nil || *req.Retryable
	if !retryable {
		if req.RetryAfterSeconds != nil {
			return invalidRequest("retry_after_seconds needs retryable: true")
		}
		o.Kind = store.Fail
		return s.recordOutcome(w, r, o)
	}
	if req.RetryAfterSeconds != nil {
		d := *req.RetryAfterSeconds
		if d < 0 || d > maxDelaySeconds {
			return invalidRequest(fmt.Sprintf("retry_after_seconds must be between 0 and %d, got %v", maxDelaySeconds, d))
		}
		o.RetryIn = time.Duration(d * float64(time.Second))
		return s.recordOutcome(w, r, o)
	}
	// The backoff grows with the attempt count, which only the task row knows. Reading it
	// first is safe: if the task is claimed again meanwhile, the token below is stale and
	// the write is refused.
	t, err := s.cfg.Store.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	o.RetryIn = store.Backoff(t.AttemptCount, s.cfg.BackoffBase, s.cfg.BackoffMax, rand.Float64)
	return s.recordOutcome(w, r, o)
}

// recordOutcome writes o and answers with the task as it is afterwards.
func (s *Server) recordOutcome(w http.ResponseWriter, r *http.Request, o store.Outcome) error {
	ctx := r.Context()
	res, err := s.cfg.Store.RecordOutcomes(ctx, []store.Outcome{o})
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("record outcome: the store returned %d results for 1 outcome", len(res))
	}
	if err := res[0].Err; err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			// The store reports an unknown task as a lost lease too; tell them apart.
			if _, gerr := s.cfg.Store.GetTask(ctx, o.TaskID); gerr != nil {
				return gerr
			}
		}
		return err
	}
	t, err := s.cfg.Store.GetTask(ctx, o.TaskID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskOut(t))
	return nil
}

// claimWaiting claims up to p.Limit of the queue's due tasks whatever its delivery mode:
// PENDING ones first (a poll-mode queue; tasks that just came due or back in an SQS-mode
// queue), then ENQUEUED ones for the rest (an SQS-mode queue, whose tasks wait in
// ENQUEUED once sent). The SQS message of a task claimed here stays behind; an SQS
// worker that receives it finds the task taken and deletes it as a duplicate.
func (s *Server) claimWaiting(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	var report store.ClaimReport
	p.Report = &report
	p.From = store.StatusPending
	tasks, err := s.cfg.Store.ClaimTasks(ctx, p)
	if err != nil || len(tasks) == p.Limit {
		return tasks, err
	}
	held := report.HeldBack
	p.From = store.StatusEnqueued
	p.Limit -= len(tasks)
	more, err := s.cfg.Store.ClaimTasks(ctx, p) // resets the report
	if held == "" {
		held = report.HeldBack
	}
	if held != "" {
		// One count per HTTP claim held back by a setting, as a Go worker counts its own.
		s.heldBack(p.Queue, held)
	}
	if err != nil {
		if len(tasks) > 0 {
			// The PENDING claims hold leases already: answer with them; the error
			// repeats on the next claim if it lasts.
			return tasks, nil
		}
		return nil, err
	}
	return append(tasks, more...), nil
}

// heldBack reports a claim held back by a queue setting to Config.ClaimHeldBack.
func (s *Server) heldBack(queue string, limit store.HoldBack) {
	if s.cfg.ClaimHeldBack != nil {
		s.cfg.ClaimHeldBack(queue, limit)
	}
}
