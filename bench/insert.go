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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

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
)

// insertCase inserts one batch of size jobs.
type insertCase struct {
	system, name string
	db           *database
	batch        func(ctx context.Context, size int) error
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
	if pair%2 == 0 {
		slices.Reverse(cases)
	}
	total, size := r.o.InsertTotal, r.o.InsertBatch
	for _, c := range cases {
		if _, err := c.db.mon.Exec(ctx, map[string]string{"river": `TRUNCATE river_job`, "rota": `TRUNCATE rota.tasks CASCADE`}[c.system]); err != nil {
			return err
		}
		t0 := time.Now()
		for done := 0; done < total; done += size {
			if err := c.batch(ctx, min(size, total-done)); err != nil {
				return fmt.Errorf("%s %s: %w", c.system, c.name, err)
			}
		}
		elapsed := time.Since(t0)
		if err := checkInserted(ctx, c, total); err != nil {
			return err
		}
		emit(Result{System: c.system, Workload: workloadInsert, Case: c.name, Jobs: total,
			Seconds: elapsed.Seconds(), TasksPerSec: float64(total) / elapsed.Seconds()})
	}
	return nil
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
		{"river", caseRiverInsertMany, riverDB, func(ctx context.Context, n int) error {
			_, err := rc.InsertMany(ctx, riverParams[:n])
			return err
		}},
		{"rota", caseRotaEnqueueMany, rotaDB, func(ctx context.Context, n int) error {
			_, err := rotaClient.EnqueueMany(ctx, rotaParams[:n])
			return err
		}},
		{"river", caseRiverInsertManyFast, riverDB, func(ctx context.Context, n int) error {
			_, err := rc.InsertManyFast(ctx, riverParams[:n])
			return err
		}},
		{"rota", caseRotaEnqueueTx, rotaDB, func(ctx context.Context, n int) error {
			return pgx.BeginFunc(ctx, rotaDB.mon, func(tx pgx.Tx) error {
				_, err := rotaClient.EnqueueTx(ctx, tx, rotaParams[:n]...)
				return err
			})
		}},
		{"river", caseRiverInsertManyTx, riverDB, func(ctx context.Context, n int) error {
			return pgx.BeginFunc(ctx, riverDB.mon, func(tx pgx.Tx) error {
				_, err := rc.InsertManyTx(ctx, tx, riverParams[:n])
				return err
			})
		}},
		{"rota", caseRotaHTTPBatch, rotaDB, func(ctx context.Context, n int) error {
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
	return cases, func() { hs.Close(); srv.Close(); apiStore.Close(); rotaClient.Close() }, nil
}
