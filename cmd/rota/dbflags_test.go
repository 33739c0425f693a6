package main

import (
	"errors"
	"strings"
	"testing"
)

// TestDBFlags: --db-max-conns and --db-listen-url are checked before anything connects,
// and the pool size is the flag's, else the URL's pool_max_conns, else the derived one.
func TestDBFlags(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--database-url", "postgres://127.0.0.1:1/x", "--db-max-conns", "-1"},
		{"serve", "--database-url", "postgres://127.0.0.1:1/x", "--db-max-conns", "-1"},
		{"worker", "--database-url", "postgres://127.0.0.1:1/x", "--db-listen-url", "::not a url"},
	} {
		_, err := runCLI(t, args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--db-") {
			t.Errorf("%v: got %v, want a usage error naming the flag", args, err)
		}
	}

	for _, c := range []struct {
		url        string
		flag, want int
	}{
		{"postgres://h/db", 0, 6},                  // derived: a worker of one queue
		{"postgres://h/db", 7, 7},                  // the flag wins
		{"postgres://h/db?pool_max_conns=3", 0, 3}, // the URL wins over the derived size
		{"postgres://h/db?pool_max_conns=3", 9, 9}, // the flag wins over the URL
	} {
		flag := c.flag
		f := dbFlags{url: &c.url, maxConns: &flag}
		pool, err := newPool(c.url, f.poolSize(workerDefaultConns(1, false)))
		if err != nil {
			t.Fatal(err)
		}
		if got := int(pool.Config().MaxConns); got != c.want {
			t.Errorf("%s with --db-max-conns %d: %d connections, want %d", c.url, c.flag, got, c.want)
		}
		pool.Close()
	}
	if got := workerDefaultConns(1, true); got != 10 {
		t.Errorf("an SQS-mode worker of one queue gets %d connections, want 10", got)
	}
	if got := workerDefaultConns(100, false); got != maxDefaultConns {
		t.Errorf("a worker of 100 queues gets %d connections, want the cap %d", got, maxDefaultConns)
	}
}
