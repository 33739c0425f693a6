package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
)

// shutdownTimeout bounds how long in-flight HTTP requests may take to finish on stop.
const shutdownTimeout = 10 * time.Second

// listen binds addr before anything else starts, so a busy port fails at once with one
// line, and so that --addr 127.0.0.1:0 can report the port it got.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Connection limits of every HTTP server (the API with the dashboard, and a worker's
// --metrics-addr), so that slow or idle clients cannot hold connections forever.
const (
	// readHeaderTimeout bounds the request line and headers.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds reading a whole request, body included (a 16 MiB batch needs
	// about 280 KB/s). It does not cover the handler: net/http clears the read deadline
	// once the body is read, so a claim's long poll (up to 20 s) and a slow store call
	// keep their context (TestTimeoutsCloseSlowAndIdleConnections).
	readTimeout = time.Minute
	// writeTimeout bounds a client that stops reading an answer. It runs from the end of
	// the request headers, so it has to cover the 20 s long poll, a slow store call and
	// writing the largest answer (a page of 1,000 tasks with payloads up to 1 MiB each)
	// to a slow client: cutting it short truncates the answer with no error the client
	// can tell from a broken connection. Hence generous.
	writeTimeout = 10 * time.Minute
	// idleTimeout closes a keep-alive connection between requests; longer than Go
	// clients' own 90 s, so that a client retires an idle connection before the server
	// closes it under a request it is sending.
	idleTimeout = 2 * time.Minute
)

// newHTTPServer returns the server for h with the connection limits above.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serveHTTP serves h on ln until ctx ends, then shuts down gracefully: stopping (if not
// nil; the API's Close, which ends its long polls) runs first, then in-flight requests
// get shutdownTimeout to finish.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, stopping func(), log *slog.Logger) error {
	srv := newHTTPServer(h, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	if stopping != nil {
		stopping()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("http shutdown did not finish in time", "error", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// runConcurrently runs every component until ctx ends or one fails; the first failure stops
// the rest (each component shuts itself down gracefully when its ctx ends).
func runConcurrently(ctx context.Context, components ...func(ctx context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range components {
		g.Go(func() error { return c(gctx) })
	}
	return g.Wait()
}

// printURL tells the user where the server is, on stdout (scripts read it from there).
func printURL(w io.Writer, what string, ln net.Listener) {
	fmt.Fprintf(w, "%s listening on http://%s\n", what, ln.Addr())
}

// warnUnprotected warns at start when the server listens on an address other machines
// can reach (not loopback) without a token: anyone who reaches it can then create,
// cancel and replay tasks, and read their payloads.
func warnUnprotected(w io.Writer, ln net.Listener, token string) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if token != "" || !ok || addr.IP.IsLoopback() {
		return
	}
	fmt.Fprintf(w, "rota: warning: listening on %s without a token: anyone who can reach this address can read, create, cancel and replay tasks; set --token (ROTA_API_TOKEN) or listen on 127.0.0.1\n", ln.Addr())
}
