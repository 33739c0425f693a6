package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rotaqueue/rota/internal/store"
)

// The channels Rota notifies: the tasks_notify_insert trigger notifies tasksChannel with
// the queue name as payload; cancel_task.sql notifies cancelChannel with the task id.
const (
	tasksChannel  = "rota_tasks"
	cancelChannel = "rota_cancel"
)

// Reconnect backoff of a listener whose connection failed. The ceiling is short: a
// listener that reconnects wakes its reader (Listen's ListenResumed), which is how a
// worker learns that the database is back, and connecting to a server that is down is
// refused at once, so trying often costs little.
const (
	listenRetryMin = 25 * time.Millisecond
	listenRetryMax = time.Second
	// wakeBuffer is how many wake-ups a listener holds for a slow reader; more are dropped
	// (they are hints: the reader polls anyway).
	wakeBuffer = 256
)

// WaitForTasks listens for inserted due tasks on a connection of its own (opened with the
// pool's settings, not taken from it, so that a long wait never starves the pool) and
// forwards each notified queue name without blocking. A broken connection is reopened
// with backoff. The channel closes when ctx ends or the store is closed.
func (s *Store) WaitForTasks(ctx context.Context) (<-chan string, error) {
	ch := make(chan string, wakeBuffer)
	err := s.subscribe(ctx, []string{tasksChannel}, func(n *pgconn.Notification) {
		if n == nil {
			return // a reconnect: WaitForTasks readers poll anyway
		}
		select {
		case ch <- n.Payload:
		default: // the reader is behind; it polls anyway
		}
	}, func() { close(ch) })
	if err != nil {
		return nil, fmt.Errorf("wait for tasks: %w", err)
	}
	return ch, nil
}

// Listen is WaitForTasks that also hears cancel requests and reports reconnects, on one
// dedicated connection; see store.Store.
func (s *Store) Listen(ctx context.Context) (<-chan store.Notification, error) {
	ch := make(chan store.Notification, wakeBuffer)
	send := func(n store.Notification) {
		select {
		case ch <- n:
		default: // the reader is behind: a hint lost (workers poll, heartbeats see cancels)
		}
	}
	err := s.subscribe(ctx, []string{tasksChannel, cancelChannel}, func(n *pgconn.Notification) {
		switch {
		case n == nil:
			send(store.Notification{Kind: store.ListenResumed})
		case n.Channel == tasksChannel:
			send(store.Notification{Kind: store.TasksDue, Queue: n.Payload})
		case n.Channel == cancelChannel:
			if id, err := uuid.Parse(n.Payload); err == nil {
				send(store.Notification{Kind: store.CancelRequested, TaskID: id})
			}
		}
	}, func() { close(ch) })
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ch, nil
}

// subscribe opens a dedicated connection listening on channels and, until ctx ends or
// the store is closed, passes each notification to deliver, and nil after each
// reconnect; then it calls done. It returns once the connection listens, so that a
// notification sent after it returns is delivered.
func (s *Store) subscribe(ctx context.Context, channels []string, deliver func(*pgconn.Notification), done func()) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("store is closed")
	}
	s.listeners.Add(1)
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.listenCtx, cancel)
	conn, err := s.listen(ctx, channels)
	if err != nil {
		stop()
		cancel()
		s.listeners.Done()
		return err
	}
	go func() {
		defer s.listeners.Done()
		defer done()
		defer stop()
		defer cancel()
		s.forward(ctx, conn, channels, deliver)
	}()
	return nil
}

// listen opens a dedicated connection and subscribes it to channels.
func (s *Store) listen(ctx context.Context, channels []string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.listenConfig())
	if err != nil {
		return nil, err
	}
	for _, c := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+c); err != nil {
			closeConn(conn)
			return nil, err
		}
	}
	return conn, nil
}

// forward passes notifications from conn to deliver until ctx ends, reconnecting as
// needed (and delivering nil after each reconnect).
func (s *Store) forward(ctx context.Context, conn *pgx.Conn, channels []string, deliver func(*pgconn.Notification)) {
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			deliver(n)
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
			conn, _ = s.listen(ctx, channels)
		}
		deliver(nil)
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
