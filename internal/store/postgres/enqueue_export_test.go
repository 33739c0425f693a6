package postgres

// The enqueuer's statement, for the plan test in enqueue_test.go.
var EnqueueDueSQL = sqlEnqueueDue
