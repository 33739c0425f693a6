package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"golang.org/x/sync/errgroup"

	"github.com/rotaqueue/rota"
	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// The insert workload's cases, by the system and the call that inserts.
const (
	caseRiverInsertMany     = "InsertMany"
	caseRiverInsertManyFast = "InsertManyFast"
	caseRiverInsertManyTx   = "InsertManyTx"
	caseRotaEnqueueMany     = "EnqueueMany"
	caseRotaEnqueueTx       = "EnqueueTx"
	caseRotaHTTPBatch       = "HTTP batch"
	// One job per call, --producers goroutines at once, for --insert-single-duration.
	caseRiverInsertSingle = "Insert, one per call"
	caseRotaEnqueueSingle = "Enqueue, one per call"
)

// insertCase inserts one batch of size jobs, or (single) one job.
type insertCase struct {
	system, name string
	db           *database
	batch        func(ctx context.Context, size int) error
	single       func(ctx context.Context) error
	// after (may be nil) runs when the case is done: a single case closes its pool's
	// connections, so that two pools of --producers connections are never open at once.
	after func()
}

// insert runs the insert workload: every case inserts --insert-total no-op jobs in
// batches of --insert-batch, one batch at a time, into an empty job table, and no worker
// runs. River and Rota cases alternate, in an order that reverses on every other pair.
// Each Tx case is the caller's transaction: begin, the batch insert in it, commit.
func (r *runner) insert(ctx context.Context, pair int, riverDB, rotaDB *database, emit func(Result)) error {
	cases, closeCases, err := r.insertCases(ctx, riverDB, rotaDB)
	if err != nil {
		return err
	}
	defer closeCases()
	if len(r.o.InsertCases) > 0 {
		cases = slices.DeleteFunc(cases, func(c insertCase) bool { return !slices.Contains(r.o.InsertCases, c.name) })
	}
	if pair%2 == 0 {
		slices.Reverse(cases)
	}
	total, size := r.o.InsertTotal, r.o.InsertBatch
	for _, c := range cases {
		if _, err := c.db.mon.Exec(ctx, map[string]string{"river": `TRUNCATE river_job`, "rota": `TRUNCATE rota.tasks, rota.task_attempts CASCADE`}[c.system]); err != nil {
			return err
		}
		t0 := time.Now()
		n := total
		if c.single != nil {
			if n, err = r.insertSingles(ctx, c); err != nil {
				return fmt.Errorf("%s %s: %w", c.system, c.name, err)
			}
		} else {
			for done := 0; done < total; done += size {
				if err := c.batch(ctx, min(size, total-done)); err != nil {
					return fmt.Errorf("%s %s: %w", c.system, c.name, err)
				}
			}
		}
		elapsed := time.Since(t0)
		if c.after != nil {
			c.after()
		}
		if err := checkInserted(ctx, c, n); err != nil {
			return err
		}
		emit(Result{System: c.system, Workload: workloadInsert, Case: c.name, Jobs: n,
			Seconds: elapsed.Seconds(), TasksPerSec: float64(n) / elapsed.Seconds()})
	}
	return nil
}

// insertSingles runs c.single from --producers goroutines for --insert-single-duration
// and returns how many jobs they inserted.
func (r *runner) insertSingles(ctx context.Context, c insertCase) (int, error) {
	var n atomic.Int64
	end := time.Now().Add(r.o.InsertSingleDuration)
	g, gctx := errgroup.WithContext(ctx)
	for range r.o.Producers {
		g.Go(func() error {
			for time.Now().Before(end) {
				if err := c.single(gctx); err != nil {
					return err
				}
				n.Add(1)
			}
			return nil
		})
	}
	err := g.Wait()
	return int(n.Load()), err
}

func checkInserted(ctx context.Context, c insertCase, want int) error {
	var got int
	q := map[string]string{"river": `SELECT count(*) FROM river_job`, "rota": `SELECT count(*) FROM rota.tasks`}[c.system]
	if err := c.db.mon.QueryRow(ctx, q).Scan(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s %s: %d jobs in the table, want %d", c.system, c.name, got, want)
	}
	return nil
}

// insertCases builds the cases, alternating River and Rota, on each database's harness
// pool (one batch at a time needs one connection).
func (r *runner) insertCases(ctx context.Context, riverDB, rotaDB *database) ([]insertCase, func(), error) {
	size := r.o.InsertBatch
	rc, err := river.NewClient(riverpgxv5.New(riverDB.mon), &river.Config{Logger: discardLogger()})
	if err != nil {
		return nil, nil, err
	}
	riverParams := make([]river.InsertManyParams, size)
	for i := range riverParams {
		riverParams[i] = river.InsertManyParams{Args: benchArgs{}}
	}
	rotaClient := rota.NewPostgresClient(rotaDB.mon)
	rotaParams := make([]rota.EnqueueParams, size)
	for i := range rotaParams {
		rotaParams[i] = rota.EnqueueParams{Kind: "noop"}
	}

	// The HTTP API in process, on a loopback listener, as `rota serve` runs it (no token).
	apiStore := postgres.New(rotaDB.mon)
	srv, err := api.New(api.Config{Store: apiStore, Logger: discardLogger()})
	if err != nil {
		return nil, nil, err
	}
	hs := httptest.NewServer(srv)
	bodies := map[int][]byte{}
	body := func(n int) []byte {
		if b, ok := bodies[n]; ok {
			return b
		}
		tasks := make([]map[string]string, n)
		for i := range tasks {
			tasks[i] = map[string]string{"kind": "noop"}
		}
		b, _ := json.Marshal(map[string]any{"tasks": tasks})
		bodies[n] = b
		return b
	}
	httpClient := hs.Client()

	cases := []insertCase{
		{system: "river", name: caseRiverInsertMany, db: riverDB, batch: func(ctx context.Context, n int) error {
			_, err := rc.InsertMany(ctx, riverParams[:n])
			return err
		}},
		{system: "rota", name: caseRotaEnqueueMany, db: rotaDB, batch: func(ctx context.Context, n int) error {
			_, err := rotaClient.EnqueueMany(ctx, rotaParams[:n])
			return err
		}},
		{system: "river", name: caseRiverInsertManyFast, db: riverDB, batch: func(ctx context.Context, n int) error {
			_, err := rc.InsertManyFast(ctx, riverParams[:n])
			return err
		}},
		{system: "rota", name: caseRotaEnqueueTx, db: rotaDB, batch: func(ctx context.Context, n int) error {
			return pgx.BeginFunc(ctx, rotaDB.mon, func(tx pgx.Tx) error {
				_, err := rotaClient.EnqueueTx(ctx, tx, rotaParams[:n]...)
				return err
			})
		}},
		{system: "river", name: caseRiverInsertManyTx, db: riverDB, batch: func(ctx context.Context, n int) error {
			return pgx.BeginFunc(ctx, riverDB.mon, func(tx pgx.Tx) error {
				_, err := rc.InsertManyTx(ctx, tx, riverParams[:n])
				return err
			})
		}},
		{system: "rota", name: caseRotaHTTPBatch, db: rotaDB, batch: func(ctx context.Context, n int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/api/tasks/batch", bytes.NewReader(body(n)))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body) // the client reads the created tasks, as a caller would
			if resp.StatusCode != http.StatusCreated {
				return fmt.Errorf("POST /api/tasks/batch: %s: %s", resp.Status, b)
			}
			return nil
		}},
	}
	if r.o.InsertSingleDuration > 0 {
		singles, err := r.singleInsertCases(ctx, riverDB, rotaDB)
		if err != nil {
			hs.Close()
			srv.Close()
			return nil, nil, err
		}
		cases = append(cases, singles...)
	}
	return cases, func() { hs.Close(); srv.Close(); apiStore.Close(); rotaClient.Close() }, nil
}

// singleInsertCases insert one job per call, each its own transaction, as the steady
// workload's producers do, on pools of --producers connections: River Client.Insert
// (on a client with river-best's FetchCooldown, which debounces its insert
// notifications), Rota Client.Enqueue.
func (r *runner) singleInsertCases(ctx context.Context, riverDB, rotaDB *database) ([]insertCase, error) {
	riverPool, err := riverDB.newPool(ctx, r.o.Producers)
	if err != nil {
		return nil, err
	}
	rc, err := river.NewClient(riverpgxv5.New(riverPool), &river.Config{FetchCooldown: riverVariants["best"].fetchCooldown, Logger: discardLogger()})
	if err != nil {
		return nil, err
	}
	rotaPool, err := rotaDB.newPool(ctx, r.o.Producers)
	if err != nil {
		return nil, err
	}
	rotaClient := rota.NewPostgresClient(rotaPool) // its pool closes with the database
	return []insertCase{
		{system: "river", name: caseRiverInsertSingle, db: riverDB, single: func(ctx context.Context) error {
			_, err := rc.Insert(ctx, benchArgs{}, nil)
			return err
		}, after: riverPool.Reset},
		{system: "rota", name: caseRotaEnqueueSingle, db: rotaDB, single: func(ctx context.Context) error {
			_, err := rotaClient.Enqueue(ctx, rota.EnqueueParams{Kind: "noop"})
			return err
		}, after: rotaPool.Reset},
	}, nil
}
