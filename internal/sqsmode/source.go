package sqsmode

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// Source is the SQS worker's runtime.Source: it receives task ids from the SQS queue of
// each Rota queue, claims their tasks in the store, and deletes each message once the
// store has settled its task's outcome (see the package documentation).
type Source struct {
	cfg     SourceConfig
	client  *sqs.Client
	queues  *Queues
	metrics *Metrics
	log     *slog.Logger
	claims  map[string]*claimBatcher // by Rota queue
	acks    *background              // settles and sorting out received messages
	extends *background              // visibility extensions
	// extendsBatch gathers the heartbeats' extensions into batch calls (extend.go).
	extendsBatch *extendBatcher

	// deferred holds the sorting out (sortOut) of received messages that found every ack
	// slot busy. The next Fetch runs it, before it receives: the tasks claimed with those
	// messages, whose leases are running, go to the runtime first, and the fetch loops
	// still slow down while SQS is slow. At most one entry per Fetch in progress.
	deferredMu sync.Mutex
	deferred   []func()
}

var (
	_ runtime.Source      = (*Source)(nil)
	_ runtime.IdleFetcher = (*Source)(nil)
)

// receipt is a Delivery's handle on its message.
type receipt struct {
	queueURL string // the URL the message was received from
	handle   string
}

// Fetch receives up to max messages of Rota queue rq and claims their tasks in one
// statement, shared with the claims of the worker's other fetch loops that arrive while
// one is running (claimBatcher). One receive takes at most 10: when the first comes back
// full and max asks for more, the rest are received at once by concurrent short polls
// (receiveMore), so that a backlog is claimed FetchBatch ids a statement. Messages it
// cannot use are deleted or hidden again in the background (sortOut), or by the next
// Fetch when every background slot is busy.
//
// The runtime has reserved max slots for this call, so its long poll is short
// (busyWaitSeconds): a queue that runs dry gives its slots back within a second, and its
// loop then waits for work through FetchIdle, holding none.
func (s *Source) Fetch(ctx context.Context, rq string, max int) ([]runtime.Delivery, error) {
	if max < 1 {
		return nil, nil
	}
	url, msgs, err := s.receive(ctx, rq, min(max, maxBatch), min(s.cfg.WaitSeconds, busyWaitSeconds))
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	if len(msgs) == maxBatch && max > maxBatch {
		msgs = append(msgs, s.receiveMore(ctx, rq, url, max-maxBatch)...)
	}
	return s.claim(ctx, rq, url, msgs)
}

// receiveMore receives up to n more messages of Rota queue rq after a full receive from
// url: short polls (no wait) of 10, in waves of concurrent receives (firstWave, then
// the rest), the next wave only when every receive of the last came back full. A
// shallow queue thus costs at most firstWave receives that bring little, as FetchBatch
// 40 did; a backlog is received FetchBatch at a time in two round trips. Measured,
// receiving all of FetchBatch 100 at once raised SQS calls per task from 0.31 to 0.33,
// which ate the database's gain (docs/performance.md, "SQS mode (session 11)"). It is
// opportunistic: a receive that fails only brings nothing (the next Fetch meets the
// error again and reports it).
func (s *Source) receiveMore(ctx context.Context, rq, url string, n int) []types.Message {
	var out []types.Message
	for wave := firstWave; n > 0; wave = maxWave {
		msgs, full := s.receiveWave(ctx, rq, url, min(n, wave*maxBatch))
		out = append(out, msgs...)
		n -= len(msgs)
		if !full {
			break
		}
	}
	return out
}

// Waves of receiveMore, in receives of 10.
const (
	firstWave = 3
	maxWave   = FetchBatch / maxBatch
)

// receiveWave receives up to n messages of Rota queue rq from url with concurrent short
// polls of up to 10, and says whether every poll came back full.
func (s *Source) receiveWave(ctx context.Context, rq, url string, n int) ([]types.Message, bool) {
	batches := make([][]types.Message, (n+maxBatch-1)/maxBatch)
	warm.each(len(batches), len(batches), func(i int) {
		// The receipts are kept with the first receive's URL (claim): messages of
		// another URL (the queue made again meanwhile) are left to come back.
		if got, msgs, err := s.receive(ctx, rq, min(maxBatch, n-i*maxBatch), 0); err == nil && got == url {
			batches[i] = msgs
		}
	})
	var out []types.Message
	full := true
	for i, b := range batches {
		out = append(out, b...)
		full = full && len(b) == min(maxBatch, n-i*maxBatch)
	}
	return out, full
}

// FetchIdle is Fetch for an idle queue, whose loop holds no slot (runtime.IdleFetcher):
// it long-polls for up to min(max, 10) messages for WaitSeconds, then reserves slots
// for what it received and claims that many; the messages it got no slot for (other
// queues took the free slots meanwhile) are made visible again at once
// (ChangeMessageVisibility 0), for this worker's next fetch or another worker.
func (s *Source) FetchIdle(ctx context.Context, rq string, max int, reserve func(n int) int) ([]runtime.Delivery, error) {
	if max < 1 {
		return nil, nil
	}
	url, msgs, err := s.receive(ctx, rq, min(max, maxBatch), s.cfg.WaitSeconds)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	n := min(reserve(len(msgs)), len(msgs))
	if n < len(msgs) {
		rest := msgs[n:]
		s.acks.goOrRun(func() { s.giveBack(ctx, rq, url, rest) })
		msgs = msgs[:n]
	}
	if n == 0 {
		return nil, nil
	}
	return s.claim(ctx, rq, url, msgs)
}

// receive long-polls Rota queue rq's SQS queue for up to max messages, waiting up to
// wait seconds, with visibility = the lease. It first runs the sorting out deferred by
// earlier fetches, and creates a queue SQS reports missing (when allowed).
func (s *Source) receive(ctx context.Context, rq string, max, wait int) (string, []types.Message, error) {
	q, err := s.queues.forRota(rq)
	if err != nil {
		return "", nil, err
	}
	s.runDeferred()
	url, err := q.url(ctx)
	if err != nil {
		return "", nil, err
	}
	out, err := s.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(max),
		WaitTimeSeconds:             int32(wait),
		VisibilityTimeout:           visibilitySeconds(s.cfg.LeaseDuration),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, nil // stopping: nothing was received
		}
		if isQueueMissing(err) {
			if healed, herr := q.heal(ctx, url); herr != nil {
				err = fmt.Errorf("%w (and creating it again failed: %w)", err, herr)
			} else if healed {
				s.log.Warn("SQS queue was missing; created it again", "queue", rq, "sqs_queue", q.name)
			}
		}
		return "", nil, fmt.Errorf("receive from SQS queue %q: %w", q.name, err)
	}
	if len(out.Messages) > 0 {
		s.metrics.addReceived(rq, len(out.Messages))
	}
	return url, out.Messages, nil
}

// giveBack makes received messages visible again at once: the worker has no slot for
// their tasks. A message that could not be given back comes back after its visibility
// timeout instead.
func (s *Source) giveBack(ctx context.Context, rq, url string, msgs []types.Message) {
	for _, chunk := range chunks(msgs, maxBatch) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			}
		}
		cctx, cancel := callContext(ctx, s.cfg.CallTimeout)
		out, err := s.client.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		cancel()
		if err != nil {
			s.log.Warn("giving back messages failed; they come back after the lease", "queue", rq, "count", len(chunk), "error", err)
			continue
		}
		s.metrics.addReturned(rq, len(out.Successful))
	}
}

// claim claims the tasks the messages name and returns them at once (their leases are
// running); the rest is sorted out (see sortOut) in the background, or by the next Fetch:
// bodies that are not task ids, repeats of an id in the batch, and ids whose task the
// claim did not take.
func (s *Source) claim(ctx context.Context, rq, url string, msgs []types.Message) ([]runtime.Delivery, error) {
	var poison, repeats []types.Message
	first := make(map[uuid.UUID]types.Message, len(msgs))
	ids := make([]uuid.UUID, 0, len(msgs))
	for _, m := range msgs {
		id, err := uuid.Parse(strings.TrimSpace(aws.ToString(m.Body)))
		switch {
		case err != nil:
			poison = append(poison, m)
		case hasKey(first, id):
			repeats = append(repeats, m) // the first message of this id stands for both
		default:
			first[id] = m
			ids = append(ids, id)
		}
	}

	var tasks []*store.Task
	var held store.ClaimReport
	var claimErr error
	if len(ids) > 0 {
		tasks, held, claimErr = s.claims[rq].do(ctx, ids)
		if claimErr != nil {
			// The messages stay hidden for the lease, then come back and are claimed
			// then, by whichever worker receives them.
			claimErr = fmt.Errorf("claim tasks of received messages: %w", claimErr)
		}
	}
	deliveries := make([]runtime.Delivery, len(tasks))
	var unclaimed []types.Message
	if claimErr == nil {
		claimed := make(map[uuid.UUID]bool, len(tasks))
		for i, t := range tasks {
			claimed[t.ID] = true
			deliveries[i] = runtime.Delivery{Task: t, Receipt: receipt{queueURL: url, handle: aws.ToString(first[t.ID].ReceiptHandle)}}
		}
		for _, id := range ids {
			if !claimed[id] {
				unclaimed = append(unclaimed, first[id])
			}
		}
	}
	if len(poison)+len(repeats)+len(unclaimed) > 0 {
		sort := func() { s.sortOut(ctx, rq, url, poison, repeats, unclaimed, held) }
		if !s.acks.tryGo(sort) {
			s.deferredMu.Lock()
			s.deferred = append(s.deferred, sort)
			s.deferredMu.Unlock()
		}
	}
	return deliveries, claimErr
}

// runDeferred runs, in the caller, the sorting out that claim could not start.
func (s *Source) runDeferred() {
	s.deferredMu.Lock()
	fns := s.deferred
	s.deferred = nil
	s.deferredMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// sortOut deletes poison messages and repeats of an id, and judges each unclaimed
// message by its task's current state and what held the claim back (see verdict.go):
// deleted, hidden, or left alone.
func (s *Source) sortOut(ctx context.Context, rq, url string, poison, repeats, unclaimed []types.Message, held store.ClaimReport) {
	var tidy tidyList
	for _, m := range poison {
		s.metrics.addPoison(rq)
		s.log.Warn("deleting a message that is not a task id", "queue", rq, "message_id", aws.ToString(m.MessageId),
			"body", truncateBody(aws.ToString(m.Body)))
		tidy.remove(m, ReasonPoison)
	}
	for _, m := range repeats {
		tidy.remove(m, ReasonDuplicate)
	}
	for _, m := range unclaimed {
		id, _ := uuid.Parse(strings.TrimSpace(aws.ToString(m.Body)))
		s.judgeUnclaimed(ctx, rq, id, m, held, &tidy)
	}
	s.tidy(ctx, rq, url, &tidy)
}

// claimIDs claims the tasks of ids for Rota queue rq in one statement (claimBatcher.claim).
// Detached from ctx: a claim that commits while the worker is stopping must still reach
// the runtime, or its tasks would sit leased until a reaper frees them.
func (s *Source) claimIDs(ctx context.Context, rq string, ids []uuid.UUID) ([]*store.Task, store.ClaimReport, error) {
	cctx, cancel := callContext(ctx, s.cfg.CallTimeout)
	defer cancel()
	var report store.ClaimReport
	tasks, err := s.cfg.Store.ClaimTasks(cctx, store.ClaimParams{
		Queue: rq, From: store.StatusEnqueued, TaskIDs: ids, WorkerID: s.cfg.WorkerID,
		Limit: len(ids), LeaseDuration: s.cfg.LeaseDuration, Report: &report,
	})
	if err == nil && report.HeldBack != "" {
		s.metrics.addHeldBack(rq, report.HeldBack)
	}
	return tasks, report, err
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// judgeUnclaimed decides what to do with the message of a task the claim did not take,
// from the task's current state in the store (see verdict).
func (s *Source) judgeUnclaimed(ctx context.Context, rq string, id uuid.UUID, m types.Message, held store.ClaimReport, tidy *tidyList) {
	cctx, cancel := callContext(ctx, s.cfg.CallTimeout)
	task, err := s.cfg.Store.GetTask(cctx, id)
	cancel()
	receives, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	var storeNow time.Time // the store's clock: whether the task is due is not this process's call
	if task != nil {
		storeNow = task.ReadAt
	}
	v := judge(task, err, rq, storeNow, receives, s.cfg.RetryDelay, held)
	attrs := []any{"queue", rq, "task_id", id, "why", v.why}
	switch v.action {
	case actionDelete:
		if v.reason == ReasonMisrouted {
			s.log.Warn("deleting a message of a task of another queue", append(attrs, "task_queue", task.Queue)...)
		} else {
			s.log.Debug("deleting a duplicate message", attrs...)
		}
		tidy.remove(m, v.reason)
	case actionDefer:
		s.log.Debug("hiding a message until its task is claimable", append(attrs, "for", v.hideFor.String())...)
		tidy.hide(m, v.hideFor)
	default:
		s.log.Warn("leaving a message for redelivery: its task could not be read", append(attrs, "error", err)...)
	}
}

// Close sorts out the received messages still deferred (see Source.deferred) and waits
// for the source's background SQS calls (deletes, DLQ publishes, visibility changes) to
// end; each is bounded by a timeout. Call it after the worker's Run returned.
func (s *Source) Close() {
	s.runDeferred()
	s.acks.wait()
	s.extends.wait()
}

// truncateBody keeps a poison body's log line short.
func truncateBody(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}
