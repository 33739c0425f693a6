package postgres

import "time"

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

// SetAfterEmptyPlainClaim runs fn between a plain claim that claimed nothing and the
// rota.claim_limited call after it; the returned func removes it.
func SetAfterEmptyPlainClaim(fn func(queue string)) (restore func()) {
	afterEmptyPlainClaim = fn
	return func() { afterEmptyPlainClaim = nil }
}

// FlowControlledRecently reports whether s's next claim of queue skips the plain statement.
func FlowControlledRecently(s *Store, queue string) bool {
	return s.flowControlled.recently(queue) && !s.plainQueues.recently(queue)
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
