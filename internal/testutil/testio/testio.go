// Package testio holds the writers tests give to code that writes from other goroutines:
// loggers of workers and servers, the output of processes.
package testio

import (
	"bytes"
	"io"
	"sync"
	"testing"
)

// LockedBuffer is a bytes.Buffer that may be written and read from different goroutines
// at once. The zero value is ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of what was written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestOutput writes to t's output until t's cleanup, and discards after: a goroutine
// that outlives its test (a handler abandoned at shutdown, a background SQS call) may
// still log, and writing to a finished test's output panics.
func TestOutput(t *testing.T) io.Writer {
	w := &cutoffWriter{w: t.Output()}
	t.Cleanup(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	})
	return w
}

type cutoffWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (c *cutoffWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return len(p), nil
	}
	return c.w.Write(p)
}
