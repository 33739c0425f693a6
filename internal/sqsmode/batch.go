package sqsmode

import (
	"context"
	"math"
	"time"
)

// maxBatch is SQS's limit for one batch call (send, delete, change visibility) and for
// one receive.
const maxBatch = 10

// MaxReceiveBatch is the most messages one receive returns, so the most tasks one Fetch
// claims: the worker's runtime.Config.FetchBatch in SQS mode.
const MaxReceiveBatch = maxBatch

// maxVisibility is the longest visibility timeout SQS accepts: 12 hours.
const maxVisibility = 12 * time.Hour

// chunks splits items into consecutive slices of at most size.
func chunks[T any](items []T, size int) [][]T {
	var out [][]T
	for len(items) > 0 {
		n := min(size, len(items))
		out = append(out, items[:n:n])
		items = items[n:]
	}
	return out
}

// visibilitySeconds is d as an SQS visibility timeout: whole seconds rounded up, within
// 0 to 12 hours.
func visibilitySeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32(min(math.Ceil(d.Seconds()), maxVisibility.Seconds()))
}

// callContext bounds one SQS call made on behalf of work that must finish even when the
// caller is stopping (a delete after a commit, say): it keeps ctx's values, drops its
// cancellation and adds timeout.
func callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}
