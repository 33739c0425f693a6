package runtime

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/store"
)

// inflight is a claimed task from claim until its outcome is recorded (or its lease is
// lost). The heartbeat loop keeps its lease alive that whole time, including while the
// outcome waits in the committer.
type inflight struct {
	task    *store.Task
	receipt any                     // the Source's handle on the delivery (nil in poll mode)
	cancel  context.CancelCauseFunc // cancels the handler's context
	span    trace.SpanContext       // the attempt's span, which the commit span links to
	claim   trace.SpanContext       // the claim's span, which the attempt span links to

	// lastBeat is the lease's start (leaseStart) or the start of its last successful
	// heartbeat, in Unix nanoseconds: the heartbeat loop and an outage's recovery beat.
	lastBeat atomic.Int64

	finished        atomic.Bool // the handler returned
	cancelRequested atomic.Bool // a heartbeat saw CancelRequestedAt
	leaseLost       atomic.Bool // another worker owns the task now; record nothing
	abandoned       atomic.Bool // the handler ignored its ended context; given up (executor.abandon)
}

// registry holds the in-flight tasks for the heartbeat loop.
type registry struct {
	mu sync.Mutex
	m  map[uuid.UUID]*inflight
}

func newRegistry() *registry { return &registry{m: make(map[uuid.UUID]*inflight)} }

func (r *registry) add(e *inflight) {
	r.mu.Lock()
	r.m[e.task.ID] = e
	r.mu.Unlock()
}

// get returns the entry of task id, or nil.
func (r *registry) get(id uuid.UUID) *inflight {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

// remove drops e, unless the task was re-claimed since and the key names a newer entry.
func (r *registry) remove(e *inflight) {
	r.mu.Lock()
	if r.m[e.task.ID] == e {
		delete(r.m, e.task.ID)
	}
	r.mu.Unlock()
}

func (r *registry) snapshot() []*inflight {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*inflight, 0, len(r.m))
	for _, e := range r.m {
		out = append(out, e)
	}
	return out
}

// ids returns the ids of the tasks held: running, or with an outcome not yet written.
func (r *registry) ids() []uuid.UUID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]uuid.UUID, 0, len(r.m))
	for id := range r.m {
		out = append(out, id)
	}
	return out
}

func (r *registry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
