package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestHTTPServerTimeouts(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	const longPoll = 20 * time.Second // the API's maxWaitSeconds
	goIdle := http.DefaultTransport.(*http.Transport).IdleConnTimeout
	switch {
	case srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout < srv.ReadHeaderTimeout:
		t.Errorf("ReadHeaderTimeout %s, ReadTimeout %s: want both set, the second no shorter", srv.ReadHeaderTimeout, srv.ReadTimeout)
	case srv.IdleTimeout <= goIdle:
		t.Errorf("IdleTimeout %s: want it longer than Go clients' %s", srv.IdleTimeout, goIdle)
	case srv.WriteTimeout < longPoll+5*time.Minute:
		t.Errorf("WriteTimeout %s: want a long poll plus minutes to write a large page", srv.WriteTimeout)
	}
}

// TestTimeoutsCloseSlowAndIdleConnections runs newHTTPServer's server with short limits:
// a client that stops sending its body, and one that keeps an idle connection, lose
// their connections; a handler that runs past ReadTimeout (a long poll) is not cut.
func TestTimeoutsCloseSlowAndIdleConnections(t *testing.T) {
	bodyErr := make(chan error, 1)
	pollCtxErr := make(chan error, 1)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/stalled":
			bodyErr <- err
		case "/long-poll":
			<-time.After(5 * readTimeoutForTest) // past the read deadline
			pollCtxErr <- r.Context().Err()
		}
		fmt.Fprintln(w, "ok")
	}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.ReadTimeout, srv.IdleTimeout = readTimeoutForTest, readTimeoutForTest
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dial := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
		return conn, bufio.NewReader(conn)
	}
	const post = "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s"

	conn, _ := dial()
	fmt.Fprintf(conn, post, "/stalled", 100, "only ten b")
	var ne net.Error
	if err := <-bodyErr; !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("reading a stalled body: %v, want a timeout", err)
	}

	conn, rd := dial()
	fmt.Fprintf(conn, post, "/long-poll", 2, "{}")
	res, err := http.ReadResponse(rd, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("long poll: %v %v", res, err)
	}
	if err := <-pollCtxErr; err != nil {
		t.Errorf("the handler's context ended past ReadTimeout: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	// Now idle: the server closes the connection.
	if _, err := rd.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v, want EOF (closed by the server)", err)
	}
}

const readTimeoutForTest = 100 * time.Millisecond
