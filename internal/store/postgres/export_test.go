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

// SetCopyMinTasks sets the smallest batch CreateTasks copies (createcopy.go) for a
// benchmark or test; the returned func restores it.
func SetCopyMinTasks(n int) (restore func()) {
	old := copyMinTasks
	copyMinTasks = n
	return func() { copyMinTasks = old }
}

// CopyMinTasks is the smallest batch CreateTasks copies.
func CopyMinTasks() int { return copyMinTasks }
