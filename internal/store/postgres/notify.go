package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channel the tasks_notify_insert trigger notifies, with the queue name as payload.
const tasksChannel = "rota_tasks"

// Reconnect backoff of a listener whose connection failed.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 10 * time.Second
	// wakeBuffer is how many wake-ups a listener holds for a slow reader; more are dropped
	// (they are hints: the reader polls anyway).
	wakeBuffer = 256
)

// WaitForTasks listens for inserted due tasks on a connection of its own (opened with the
// pool's settings, not taken from it, so that a long wait never starves the pool) and
// forwards each notified queue name without blocking. A broken connection is reopened
// with backoff. The channel closes when ctx ends or the store is closed.
func (s *Store) WaitForTasks(ctx context.Context) (<-chan string, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("wait for tasks: store is closed")
	}
	s.listeners.Add(1)
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.listenCtx, cancel)
	// Listening before returning means a task inserted after this call returns is seen.
	conn, err := s.listen(ctx)
	if err != nil {
		stop()
		cancel()
		s.listeners.Done()
		return nil, fmt.Errorf("wait for tasks: %w", err)
	}
	ch := make(chan string, wakeBuffer)
	go func() {
		defer s.listeners.Done()
		defer close(ch)
		defer stop()
		defer cancel()
		s.forward(ctx, conn, ch)
	}()
	return ch, nil
}

// listen opens a dedicated connection and subscribes it to tasksChannel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.listenConfig())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+tasksChannel); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

// forward relays notifications from conn to ch until ctx ends, reconnecting as needed.
func (s *Store) forward(ctx context.Context, conn *pgx.Conn, ch chan<- string) {
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			select {
			case ch <- n.Payload:
			default: // the reader is behind; it polls anyway
			}
			continue
		}
		closeConn(conn)
		conn = nil
		for delay := listenRetryMin; conn == nil; delay = min(2*delay, listenRetryMax) {
			if ctx.Err() != nil {
				return
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			conn, _ = s.listen(ctx)
		}
	}
}

// ListenWith makes WaitForTasks listen on connections opened with cfg instead of the
// pool's settings: a pool behind PgBouncer in transaction mode cannot carry LISTEN (the
// session that listened goes back to PgBouncer's pool after each statement), so the
// listener needs a direct URL. Call it before WaitForTasks.
func (s *Store) ListenWith(cfg *pgx.ConnConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listenCfg = cfg
}

func (s *Store) listenConfig() *pgx.ConnConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listenCfg != nil {
		return s.listenCfg
	}
	return s.pool.Config().ConnConfig
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
