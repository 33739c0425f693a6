package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Insights are the read-only summaries an operator's overview needs beyond Stats: how
// many tasks finished recently, and which running tasks are stuck. Both adapters
// implement them with the same results (the conformance suite checks it).
type Insights interface {
	// Throughput counts the tasks that finished at or after since, by the bucket their
	// completed_at falls in: bucket k covers [since + k*bucket, since + (k+1)*bucket).
	// Only buckets holding at least one finished task are returned, oldest first.
	// A task counts by its current status: SUCCEEDED as succeeded, DEAD and FAILED as
	// failed (CANCELED counts as neither; a replayed task no longer counts). since is
	// used at microsecond precision, as the database keeps time. ErrInvalid when since is
	// zero or bucket is shorter than MinThroughputBucket.
	Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]ThroughputBucket, error)

	// StuckTasks returns up to limit PROCESSING tasks whose lease has expired (their
	// worker died or froze and the reaper has not yet handled them), the longest
	// expired first. ErrInvalid unless 1 <= limit <= MaxListLimit.
	StuckTasks(ctx context.Context, limit int) ([]*Task, error)
}

// GroupInsights is what the rota_group_running gauges read; both adapters implement it
// (conformance Insights/RunningByGroup).
type GroupInsights interface {
	// RunningByGroup counts the PROCESSING tasks of each queue of queues by group_key
	// (the rota_group_running gauges). Tasks without a group key are not counted, and
	// only groups with a running task appear, ordered by queue, then most running first,
	// then group key. It reads only the PROCESSING tasks of the queues asked for (through
	// an index in PostgreSQL), so its cost is bounded by what runs, never by the
	// backlog. ErrInvalid for an invalid queue name.
	RunningByGroup(ctx context.Context, queues []string) ([]GroupRunning, error)
}

// GroupRunning is one group's count of RunningByGroup.
type GroupRunning struct {
	Queue    string
	GroupKey string
	Running  int64
}

// ValidateQueues checks the queue names of a call that takes several.
func ValidateQueues(queues []string) error {
	for _, q := range queues {
		if err := ValidateName("queue", q); err != nil {
			return err
		}
	}
	return nil
}

// SortGroupRunning puts counts in RunningByGroup's order.
func SortGroupRunning(gs []GroupRunning) {
	slices.SortFunc(gs, func(a, b GroupRunning) int {
		return cmp.Or(strings.Compare(a.Queue, b.Queue), cmp.Compare(b.Running, a.Running), strings.Compare(a.GroupKey, b.GroupKey))
	})
}

// ThroughputBucket is one interval of Throughput.
type ThroughputBucket struct {
	Start     time.Time // UTC
	Succeeded int64
	Failed    int64 // DEAD and FAILED
}

// MinThroughputBucket is the shortest bucket Throughput accepts.
const MinThroughputBucket = time.Second

// ValidateThroughput checks the arguments of Insights.Throughput.
func ValidateThroughput(since time.Time, bucket time.Duration) error {
	if since.IsZero() {
		return fmt.Errorf("%w: since is required", ErrInvalid)
	}
	if bucket < MinThroughputBucket {
		return fmt.Errorf("%w: bucket must be at least %s, got %s", ErrInvalid, MinThroughputBucket, bucket)
	}
	return nil
}

// ValidateStuckLimit checks the limit of Insights.StuckTasks.
func ValidateStuckLimit(limit int) error {
	if limit < 1 || limit > MaxListLimit {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxListLimit, limit)
	}
	return nil
}
