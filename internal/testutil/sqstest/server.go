package sqstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

const (
	// startTimeout bounds node's start-up, a few hundred milliseconds on an idle machine.
	startTimeout = 60 * time.Second
	// stopTimeout is how long a SIGTERM gets before SIGKILL.
	stopTimeout = 10 * time.Second
	// rebindTimeout is how long Restart retries while the old port is still taken.
	rebindTimeout = 10 * time.Second
)

// Server is a fauxqs process on 127.0.0.1 owned by one test. Its endpoint never changes,
// across Kill and Restart.
type Server struct {
	t        testing.TB
	launcher launcher
	endpoint string
	port     int
	client   *sqs.Client // for the helpers; the endpoint outlives restarts, so does it

	mu   sync.Mutex
	proc *process // nil while killed
}

// Start starts fauxqs on a free loopback port for t and stops it when t ends. It skips t
// when node or fauxqs is missing, or fails it when CI=true or ROTA_REQUIRE_INTEGRATION=1.
func Start(t testing.TB) *Server {
	t.Helper()
	l := requireLauncher(t)
	p, endpoint, err := l.launch(0)
	if err != nil {
		t.Fatalf("sqstest: start fauxqs: %v", err)
	}
	port, err := portOf(endpoint)
	if err != nil {
		p.kill()
		t.Fatalf("sqstest: %v", err)
	}
	s := &Server{t: t, launcher: l, endpoint: endpoint, port: port, proc: p, client: NewClient(endpoint)}
	t.Cleanup(s.stop)
	return s
}

// Endpoint is the server's base URL, http://127.0.0.1:PORT: ROTA_SQS_ENDPOINT, or an SDK
// client's BaseEndpoint.
func (s *Server) Endpoint() string { return s.endpoint }

// Kill ends the server with SIGKILL, as an outage would: every queue and message is lost,
// and requests fail with connection errors until Restart. Killing a killed server does
// nothing. Call it from the goroutine of the test that started the server: it fails that
// test on error.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	if err := p.kill(); err != nil {
		s.t.Fatalf("sqstest: kill fauxqs: %v", err)
	}
}

// Restart starts the server again on the same port, empty (no queues): Kill first if it
// is still running. Call it from the goroutine of the test that started the server: it
// fails that test on error.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	deadline := time.Now().Add(rebindTimeout)
	for {
		p, endpoint, err := s.launcher.launch(s.port)
		if err == nil {
			if endpoint != s.endpoint {
				p.kill()
				s.t.Fatalf("sqstest: restarted fauxqs at %s, want %s", endpoint, s.endpoint)
			}
			s.mu.Lock()
			s.proc = p
			s.mu.Unlock()
			return
		}
		// The port is free the moment the old process dies, but another program may have
		// taken it meanwhile, for a moment.
		if !strings.Contains(err.Error(), "EADDRINUSE") || time.Now().After(deadline) {
			s.t.Fatalf("sqstest: restart fauxqs on port %d: %v", s.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the server at the end of the test: closing its stdin or SIGTERM each stop it
// cleanly; SIGKILL after stopTimeout.
func (s *Server) stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.stdin.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.kill()
	}
}

// process is one run of the launcher.
type process struct {
	cmd    *exec.Cmd
	stdin  io.Closer     // the launcher exits when this closes: a dead test leaves no server
	exited chan struct{} // closed once cmd.Wait has returned
	stderr *bytes.Buffer // read only after exited is closed
}

func (p *process) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// launch starts the launcher on port (0 = a free one) and waits for the line that says
// it listens, returning the endpoint from that line.
func (l launcher) launch(port int) (*process, string, error) {
	cmd := exec.Command(l.node, "launch.mjs", strconv.Itoa(port))
	cmd.Dir = l.dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	ready := &firstLine{line: make(chan string, 1)}
	stderr := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = ready, stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("%s launch.mjs: %w", l.node, err)
	}
	p := &process{cmd: cmd, stdin: stdin, exited: make(chan struct{}), stderr: stderr}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()

	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	select {
	case line := <-ready.line:
		var msg struct {
			Endpoint string `json:"endpoint"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.Endpoint == "" {
			_ = p.kill()
			return nil, "", fmt.Errorf("launch.mjs printed %q, want {\"endpoint\":...}", line)
		}
		return p, msg.Endpoint, nil
	case <-p.exited:
		return nil, "", fmt.Errorf("launch.mjs exited (%v): %s", cmd.ProcessState, strings.TrimSpace(stderr.String()))
	case <-timeout.C:
		_ = p.kill()
		return nil, "", fmt.Errorf("launch.mjs did not report an endpoint within %v: %s", startTimeout, strings.TrimSpace(stderr.String()))
	}
}

// firstLine is the launcher's stdout: it hands over the first line and drops the rest.
// exec calls Write from one goroutine, so it needs no lock.
type firstLine struct {
	buf  []byte
	sent bool
	line chan string
}

func (w *firstLine) Write(b []byte) (int, error) {
	if w.sent {
		return len(b), nil
	}
	w.buf = append(w.buf, b...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.line <- string(w.buf[:i])
		w.sent, w.buf = true, nil
	}
	return len(b), nil
}

func portOf(endpoint string) (int, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0, fmt.Errorf("endpoint %q has no port", endpoint)
	}
	return port, nil
}
