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
