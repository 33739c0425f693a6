package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// Progress follows the running workload, for a progress display: the workloads update
// it, a display polls Snapshot. The zero value is ready; a nil *Progress ignores updates.
type Progress struct {
	mu       sync.Mutex
	workload string
	phase    string
	total    int64
	started  time.Time
	done     atomic.Int64
}

// ProgressSnapshot is the state of a Progress at one moment.
type ProgressSnapshot struct {
	Workload string // "" before the first workload starts
	Phase    string // what the workload is doing, e.g. "insert", "drain"
	Done     int64
	Total    int64 // 0 when unknown
	Elapsed  time.Duration
}

// begin starts a new phase with its total (0 = unknown).
func (p *Progress) begin(workload, phase string, total int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.workload, p.phase, p.total, p.started = workload, phase, total, time.Now()
	p.done.Store(0)
}

func (p *Progress) add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

func (p *Progress) set(n int64) {
	if p != nil {
		p.done.Store(n)
	}
}

// Snapshot returns the current state.
func (p *Progress) Snapshot() ProgressSnapshot {
	if p == nil {
		return ProgressSnapshot{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := ProgressSnapshot{Workload: p.workload, Phase: p.phase, Total: p.total, Done: p.done.Load()}
	if !p.started.IsZero() {
		s.Elapsed = time.Since(p.started)
	}
	return s
}
