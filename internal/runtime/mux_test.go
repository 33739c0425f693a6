package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

func TestMuxKindsAndDispatch(t *testing.T) {
	mux := runtime.NewMux()
	mux.HandleFunc("b", func(context.Context, *runtime.Job) error { return errors.New("from b") })
	mux.Handle("a", runtime.HandlerFunc(func(context.Context, *runtime.Job) error { return nil }))
	if got := mux.Kinds(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Kinds() = %v", got)
	}
	if err := mux.Work(context.Background(), &runtime.Job{Task: store.Task{Kind: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := mux.Work(context.Background(), &runtime.Job{Task: store.Task{Kind: "b"}}); err == nil || err.Error() != "from b" {
		t.Fatalf("b: %v", err)
	}
	err := mux.Work(context.Background(), &runtime.Job{Task: store.Task{Kind: "zzz"}})
	if !errors.Is(err, runtime.ErrNoHandler) || err.Error() != `no handler registered for kind "zzz"` {
		t.Fatalf("unknown kind: %v", err)
	}
}

func TestMuxPanicsOnMisuse(t *testing.T) {
	noop := runtime.HandlerFunc(func(context.Context, *runtime.Job) error { return nil })
	for name, f := range map[string]func(m *runtime.Mux){
		"duplicate":   func(m *runtime.Mux) { m.Handle("k", noop); m.Handle("k", noop) },
		"empty kind":  func(m *runtime.Mux) { m.Handle("", noop) },
		"bad kind":    func(m *runtime.Mux) { m.Handle("has space", noop) },
		"nil handler": func(m *runtime.Mux) { m.Handle("k", nil) },
		"nil func":    func(m *runtime.Mux) { m.HandleFunc("k", nil) },
		"bad backoff": func(m *runtime.Mux) { m.Handle("k", noop, runtime.WithBackoff(time.Hour, time.Second)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(runtime.NewMux())
		}()
	}
}

func TestErrors(t *testing.T) {
	base := errors.New("boom")
	p := fmt.Errorf("ctx: %w", runtime.Permanent(base))
	if !runtime.IsPermanent(p) || !errors.Is(p, base) || p.Error() != "ctx: boom" {
		t.Fatalf("Permanent: %v", p)
	}
	if runtime.IsPermanent(base) || runtime.IsPermanent(nil) {
		t.Fatal("IsPermanent of a plain error")
	}
	if err := runtime.Permanent(nil); err == nil || !runtime.IsPermanent(err) {
		t.Fatalf("Permanent(nil) = %v", err)
	}
	r := runtime.RetryAfter(time.Second, base)
	if runtime.IsPermanent(r) || !errors.Is(r, base) || r.Error() != "boom" {
		t.Fatalf("RetryAfter: %v", r)
	}
	if r := runtime.RetryAfter(time.Second, nil); r == nil || r.Error() != "retry after 1s" {
		t.Fatalf("RetryAfter(d, nil) = %v", r)
	}
}

func TestNewWorkerValidates(t *testing.T) {
	s := newMemoryStore(t)
	mux := runtime.NewMux()
	ok := runtime.Config{Store: s, Mux: mux}
	if _, err := runtime.NewWorker(ok); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, mutate := range map[string]func(c *runtime.Config){
		"no store":          func(c *runtime.Config) { c.Store = nil },
		"no mux":            func(c *runtime.Config) { c.Mux = nil },
		"negative conc":     func(c *runtime.Config) { c.Concurrency = -1 },
		"bad queue":         func(c *runtime.Config) { c.Queues = map[string]int{"no spaces": 1} },
		"negative limit":    func(c *runtime.Config) { c.Queues = map[string]int{"q": -1} },
		"heartbeat > lease": func(c *runtime.Config) { c.LeaseDuration, c.HeartbeatInterval = time.Second, 2*time.Second },
		"backoff order":     func(c *runtime.Config) { c.BackoffBase, c.BackoffMax = time.Hour, time.Second },
		"claim from":        func(c *runtime.Config) { c.ClaimFrom = store.StatusProcessing },
		"negative batch":    func(c *runtime.Config) { c.FetchBatch = -1 },
		"negative poll":     func(c *runtime.Config) { c.PollInterval = -time.Second },
	} {
		c := ok
		mutate(&c)
		if _, err := runtime.NewWorker(c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestRunTwice(t *testing.T) {
	w, err := runtime.NewWorker(runtime.Config{Store: newMemoryStore(t), Mux: runtime.NewMux(), Logger: testConfig(t).Logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err == nil {
		t.Fatal("second Run: no error")
	}
}

func TestRunReturnsFatalClaimError(t *testing.T) {
	ws := &wrapStore{Store: newMemoryStore(t)}
	ws.claim = func(context.Context, store.ClaimParams) ([]*store.Task, error) {
		return nil, fmt.Errorf("%w: worker id too long", store.ErrInvalid)
	}
	w, err := runtime.NewWorker(runtime.Config{Store: ws, Mux: runtime.NewMux(), Logger: testConfig(t).Logger})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	if err := recv(t, "Run to return", done); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Run = %v, want ErrInvalid", err)
	}
}
