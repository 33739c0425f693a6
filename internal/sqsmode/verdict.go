package sqsmode

import (
	"errors"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// action is what happens to the message of a task the claim did not take.
type action int

const (
	actionLeave  action = iota // touch nothing: the message comes back after its visibility timeout
	actionDelete               // the message is not needed
	actionDefer                // hide the message for a while, then look again
)

// verdict is the decision about one unclaimed task's message.
type verdict struct {
	action  action
	reason  string        // for actionDelete: ReasonDuplicate or ReasonMisrouted
	hideFor time.Duration // for actionDefer
	why     string        // for the log
}

// judge decides about the message of an id the claim did not take, from the task as the
// store shows it now (task, err: GetTask's answer; now: the store's clock at that read,
// task.ReadAt, so that a skewed worker clock cannot hide a due task or show one too
// early), the Rota queue whose SQS queue the message came from, and how many times SQS
// has delivered the message, and what held the claim back (held: a queue setting, a
// pause or a limit, kept some of its ids; the report is the whole claim's).
//
// Deleting is safe whenever the database alone can bring the task to an end: a finished
// or missing task needs no message; a PROCESSING task is in some worker's hands, and if
// that worker dies the reaper returns the task to PENDING; a due PENDING task has no
// message of its own (a retry, a reaped or replayed task, or one requeued from a queue
// no enqueuer served), so the enqueuer of its queue sends a fresh one, or a poll worker
// claims it. Deferring keeps a message that may be needed soon. A message a setting held
// back is never deleted (DESIGN.md section 11): it is hidden until the setting may let
// it through, however often it was received (maxReceives does not apply).
func judge(task *store.Task, err error, rq string, now time.Time, receives int, retryDelay time.Duration, held store.ClaimReport) verdict {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return verdict{action: actionDelete, reason: ReasonDuplicate, why: "no such task (deleted by retention, or never created)"}
	case err != nil:
		return verdict{action: actionLeave, why: "the task could not be read"}
	case task.Queue != rq:
		// The enqueuer sends every task to its own queue's SQS queue, so this message
		// was sent by something else; the task gets its own message.
		return verdict{action: actionDelete, reason: ReasonMisrouted, why: "the task belongs to queue " + task.Queue}
	case task.Status.Terminal():
		return verdict{action: actionDelete, reason: ReasonDuplicate, why: "the task is " + string(task.Status)}
	case task.Status == store.StatusProcessing:
		return verdict{action: actionDelete, reason: ReasonDuplicate, why: "another worker holds the task"}
	case held.HeldBack != "":
		// ENQUEUED or PENDING, waiting: the queue's setting decides when it may run.
		hide := heldHide(held)
		if task.ScheduledFor.After(now) {
			hide = max(hide, min(task.ScheduledFor.Sub(now), maxVisibility))
		}
		return verdict{action: actionDefer, hideFor: hide, why: "the claim was held back by the queue's " + string(held.HeldBack)}
	case receives > maxReceives:
		return verdict{action: actionDelete, reason: ReasonDuplicate, why: "delivered too often without becoming claimable; the enqueuer sends the task again when it needs a message"}
	case task.ScheduledFor.After(now):
		// A retry or delayed task: show the message again when the task is due (SQS
		// caps a visibility timeout at 12 hours; past that it is hidden again).
		return verdict{action: actionDefer, hideFor: min(task.ScheduledFor.Sub(now), maxVisibility), why: "the task is not due yet"}
	case task.Status == store.StatusPending:
		// Not the enqueuer's send in flight: the claim by id waits for its lock and sees
		// the committed ENQUEUED. The task came back to PENDING since this message was
		// sent, and gets a message of its own when its queue's enqueuer sends it.
		return verdict{action: actionDelete, reason: ReasonDuplicate, why: "the task is PENDING again and will be sent anew"}
	default:
		// ENQUEUED and due, yet not claimed: it changed between the claim and this read
		// (another worker's attempt just ended in a retry), or its attempts are used up.
		return verdict{action: actionDefer, hideFor: retryDelay, why: "the task is " + string(task.Status) + " and was not claimable"}
	}
}

// How long a message a queue setting held back stays hidden: a pause lasts, a rate's
// window says when it admits more, a concurrency slot frees when a running task ends.
const (
	heldPauseHide       = 10 * time.Second
	heldConcurrencyHide = 2 * time.Second
)

func heldHide(held store.ClaimReport) time.Duration {
	switch held.HeldBack {
	case store.HeldByPause:
		return heldPauseHide
	case store.HeldByRate, store.HeldByGroupRate:
		// SQS counts visibility in whole seconds: 0 would show the message at once.
		return min(max(held.RetryIn, time.Second), maxVisibility)
	default:
		return heldConcurrencyHide
	}
}
