// Package sqsmode is Rota's SQS delivery mode (Mode B): Amazon SQS, or any
// SQS-compatible endpoint, carries task ids; PostgreSQL decides everything else.
//
// # The flow
//
//	rota serve --mode sqs                 rota worker --mode sqs
//	  Enqueuer (one loop per Rota queue)    Source (a runtime.Source)
//	    Store.EnqueueDue: lock due tasks      ReceiveMessage (long poll, 10; up to 40)
//	      SKIP LOCKED, send their ids         ClaimTasks(ENQUEUED -> PROCESSING, by id)
//	      (SendMessageBatch), mark the        the runtime runs the handlers, heartbeats
//	      sent ones ENQUEUED, commit            (Extend: ChangeMessageVisibilityBatch)
//	  DLQ relay (dlq.go)                    the committer writes the outcome, then
//	    Store.PublishDeadLetters: lock the      Settle: DeleteMessageBatch
//	      dead letters awaiting the DLQ,
//	      send them, clear their mark, commit
//
// Each Rota queue has its own SQS queue (Queues): the configured queue for "default",
// "<it>-<queue>" for the others, so a worker receives only ids of queues it serves. The
// dead-letter queue receives a JSON DeadTaskEvent for every SQS-mode task that ends DEAD
// or FAILED, whatever ended it (a worker's outcome, the HTTP worker protocol, the lease
// reaper): the trigger that records it in rota.dead_letters also marks it as awaiting
// the DLQ (an outbox, migration 0008), and the enqueuer's relay publishes marked events
// and clears the mark.
//
// # Why this is at-least-once, and why that is enough
//
// SQS may lose, duplicate, delay or reorder messages, and any process may die between
// any two lines. Correctness never depends on SQS:
//
//   - A task needs a message whenever the database says so: it is PENDING and due; or
//     ENQUEUED, due and not sent since it became due (retries and reaped tasks have
//     enqueued_at cleared); or ENQUEUED and sent longer than the redelivery timeout ago
//     (the message looks lost). The enqueuer keeps sending such tasks, so a lost
//     message, a failed send, or an SQS queue that lost everything is healed by the
//     database, not by SQS. A failed send leaves the task as it was. A queue that lost
//     all its messages at once (purged, re-created) is noticed by the loss watch
//     (losswatch.go), which sends its tasks again without waiting for that timeout.
//   - Only the claim's conditional UPDATE (status ENQUEUED, due, attempts left) starts
//     an attempt, so however many messages name a task, one worker runs it at a time,
//     and every later write is fenced by the claim's lease token.
//   - A message is deleted only after the task's outcome is committed (Settle is called
//     by the committer after the write). If the write fails the message stays and comes
//     back after its visibility timeout; if the worker dies the message comes back too,
//     and the lease reaper returns the task to ENQUEUED for a fresh message.
//
// A received id that the claim does not take is judged by the task's current row
// (verdict.go): missing, finished (SUCCEEDED, FAILED, DEAD, CANCELED) or PROCESSING
// (another worker holds it; if that worker dies, the reaper and the enqueuer give the
// task a new message) means the message is a duplicate and is deleted; a task of another
// Rota queue means the message was misrouted and is deleted; a task not due yet (a
// retry's backoff) gets its message hidden until it is due (ChangeMessageVisibility, at
// most 12 hours); a task still PENDING, or ENQUEUED and due yet unclaimed, is a race
// that passes in moments, so its message is hidden for a few seconds and looked at
// again. A body that is not a task id is deleted and counted as poison. Deleting is
// always safe because the enqueuer re-sends whatever the database says still needs a
// message; hiding only saves a round trip.
//
// The DLQ publish is at least once and never holds back a worker: an event waits in the
// database until SQS accepted it, through a dead worker, an unreachable DLQ or a relay
// that died before its commit (which publishes it again: a duplicate event, never a lost
// one).
//
// Because SQS is only a carrier, the SQS queues need no redrive policy and no FIFO
// ordering: standard queues are used, and fauxqs (which never loses or duplicates on
// its own) stands in for SQS in the tests, which cause both on purpose.
package sqsmode
