package runtime

import (
	"context"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// presence keeps this worker's row in the workers registry (DESIGN.md section 12): it
// registers at start, renews the row every PresenceInterval with the number of running
// handlers, and deletes it after a graceful stop. A crashed worker's row simply stops
// being renewed, and readers treat it as gone after store.DefaultWorkerExpiry.
type presence struct {
	w *Worker
}

// presenceTimeout bounds one registry write: a slow database must not hold up shutdown.
const presenceTimeout = 5 * time.Second

func (p *presence) run(ctx context.Context) {
	cfg := &p.w.cfg
	if cfg.PresenceInterval < 0 {
		return
	}
	p.register(ctx)
	loop.Repeat(ctx, cfg.PresenceInterval, p.register)
}

func (p *presence) register(ctx context.Context) {
	w := p.w
	ctx, cancel := context.WithTimeout(ctx, presenceTimeout)
	defer cancel()
	err := w.cfg.Store.RegisterWorker(ctx, store.RegisterParams{Worker: p.row()})
	if err != nil && ctx.Err() == nil {
		w.log.Warn("could not renew the worker's registry row", "error", err)
	}
}

// deregister deletes the row at a graceful stop, so the worker leaves the list at once.
func (p *presence) deregister(ctx context.Context) {
	w := p.w
	if w.cfg.PresenceInterval < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, presenceTimeout)
	defer cancel()
	if err := w.cfg.Store.DeregisterWorker(ctx, w.cfg.WorkerID); err != nil {
		w.log.Warn("could not delete the worker's registry row; it expires on its own", "error", err)
	}
}

func (p *presence) row() store.Worker {
	cfg := &p.w.cfg
	host, _ := os.Hostname()
	kinds := cfg.Mux.Kinds()
	if kinds == nil {
		kinds = []string{} // known: none
	}
	return store.Worker{
		ID:          cfg.WorkerID,
		Host:        host,
		PID:         os.Getpid(),
		Version:     cfg.Version,
		Mode:        cfg.Mode,
		Queues:      slices.Sorted(maps.Keys(cfg.Queues)),
		Kinds:       kinds,
		Concurrency: cfg.Concurrency,
		Running:     int(p.w.counters.running.Load()),
	}
}

// BuildVersion is the version of the running binary's main module from its build
// information ("devel" for a build from a work tree).
func BuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
