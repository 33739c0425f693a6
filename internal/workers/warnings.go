package workers

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// QueueKind is one (queue, kind) pair of a create request.
type QueueKind struct{ Queue, Kind string }

// Warnings returns what a create answer should warn about (DESIGN.md section 12): a
// queue with no live worker at all, or live workers none of which handles the kind (a
// worker whose kinds are unknown, an HTTP-protocol worker, handles any). The task is
// created all the same: a deploy may bring the worker. Each pair is checked once, in
// order; nil when nothing is wrong. A failed lookup gives no warning (and its error).
func (c *Cache) Warnings(ctx context.Context, pairs []QueueKind) ([]string, error) {
	var out []string
	seen := map[QueueKind]bool{}
	noWorker := map[string]bool{}
	for _, p := range pairs {
		if seen[p] || noWorker[p.Queue] {
			continue
		}
		seen[p] = true
		ws, err := c.Queue(ctx, p.Queue)
		if err != nil {
			return out, fmt.Errorf("workers of queue %q: %w", p.Queue, err)
		}
		if len(ws) == 0 {
			noWorker[p.Queue] = true
			out = append(out, fmt.Sprintf("queue %q has no live worker: the task waits until a worker serves the queue", p.Queue))
			continue
		}
		handled := false
		var kinds []string
		for _, w := range ws {
			if w.Handles(p.Kind) {
				handled = true
				break
			}
			kinds = append(kinds, w.Kinds...)
		}
		if !handled {
			slices.Sort(kinds)
			out = append(out, fmt.Sprintf("no live worker of queue %q handles kind %q (they handle: %s): the task fails and retries until one does",
				p.Queue, p.Kind, strings.Join(slices.Compact(kinds), ", ")))
		}
	}
	return out, nil
}
