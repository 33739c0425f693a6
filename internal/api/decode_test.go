package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestSlowBodyIsRequestTimeout: a client that stops sending its body before the server's
// read deadline gets 408 request_timeout, not a 500 logged as an internal error.
func TestSlowBodyIsRequestTimeout(t *testing.T) {
	srv, err := New(Config{Store: memoryStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ReadTimeout = 200 * time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	fmt.Fprintf(conn, "POST /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusRequestTimeout || body.Error.Code != codeRequestTimeout {
		t.Fatalf("stalled body: %d %+v (%v), want 408 %s", res.StatusCode, body, err, codeRequestTimeout)
	}
}
