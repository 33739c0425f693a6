package postgres

import (
	"context"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Internals the external tests look at.
var (
	ClaimPendingSQL  = sqlClaimPending
	ClaimEnqueuedSQL = sqlClaimEnqueued
	Translate        = translate
)

// SetMigrationLockTimeout shortens the lock waits of migration DDL for a test; the
// returned func restores them.
func SetMigrationLockTimeout(d time.Duration) (restore func()) {
	old := migrationLockTimeout
	migrationLockTimeout = d
	return func() { migrationLockTimeout = old }
}

// ClaimLimited claims through rota.claim_limited alone, as ClaimTasks does after a plain
// claim that found nothing: what a claim does when a task came in between the two.
func ClaimLimited(s *Store, params store.ClaimParams) ([]*store.Task, error) {
	return s.claimLimited(context.Background(), params.Queue, params.Limit, params)
}

// FlowControlledRecently reports whether s's next claim of queue skips the plain statement.
func FlowControlledRecently(s *Store, queue string) bool {
	return s.flowControlled.recently(queue)
}

// SetCopyMinTasks sets the smallest batch CreateTasks copies (createcopy.go) for a
// benchmark or test; the returned func restores it.
func SetCopyMinTasks(n int) (restore func()) {
	old := copyMinTasks
	copyMinTasks = n
	return func() { copyMinTasks = old }
}

// CopyMinTasks is the smallest batch CreateTasks copies.
func CopyMinTasks() int { return copyMinTasks }
