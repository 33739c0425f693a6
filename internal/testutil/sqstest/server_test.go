package sqstest

import (
	"syscall"
	"testing"
	"time"
)

// TestLauncherStopsCleanly: the launcher exits with status 0 both when its stdin closes (the
// test process died, so nothing is left running) and on SIGTERM.
func TestLauncherStopsCleanly(t *testing.T) {
	t.Parallel()
	for name, stop := range map[string]func(*process){
		"stdin closed": func(p *process) { _ = p.stdin.Close() },
		"SIGTERM":      func(p *process) { _ = p.cmd.Process.Signal(syscall.SIGTERM) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := Start(t)
			srv.mu.Lock()
			p := srv.proc
			srv.mu.Unlock()

			stop(p)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				t.Fatal("launcher still running 30 s later")
			}
			if !p.cmd.ProcessState.Success() {
				t.Fatalf("launcher ended with %v, want exit status 0; stderr: %s", p.cmd.ProcessState, p.stderr)
			}
		})
	}
}

func TestFirstLineKeepsOnlyTheFirstLine(t *testing.T) {
	w := &firstLine{line: make(chan string, 1)}
	for _, chunk := range []string{`{"endpoint":`, `"http://127.0.0.1:1"}` + "\nextra", "\nmore\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got := <-w.line; got != `{"endpoint":"http://127.0.0.1:1"}` {
		t.Fatalf("first line %q", got)
	}
	if len(w.line) != 0 {
		t.Fatal("a second line was handed over")
	}
}
