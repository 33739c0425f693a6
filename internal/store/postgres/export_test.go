package postgres

// Internals the external tests look at.
var (
	ClaimPendingSQL  = sqlClaimPending
	ClaimEnqueuedSQL = sqlClaimEnqueued
	Translate        = translate
)
