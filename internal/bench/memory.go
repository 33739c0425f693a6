package bench

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// sampleInterval is how often the drain samples the process's memory.
const sampleInterval = 250 * time.Millisecond

// Memory is the benchmark process's memory while a drain ran. The worker runs in this
// process, so this is the worker's memory (plus the benchmark's small bookkeeping).
// Bytes; RSS is 0 where /proc/self/status does not exist.
type Memory struct {
	// Start is measured after the backlog was inserted and a GC returned what it could
	// to the OS, just before the worker started.
	Start MemorySample `json:"start"`
	// Milestones are taken when 10%, 50% and 100% of the tasks' handlers have run.
	Milestones []MemorySample `json:"milestones"`
	// PeakRSS and PeakHeap are the highest values sampled (every 250ms, and at each
	// milestone) while the worker ran.
	PeakRSS  uint64 `json:"peak_rss_bytes"`
	PeakHeap uint64 `json:"peak_heap_inuse_bytes"`
	// Final is measured after the worker stopped.
	Final MemorySample `json:"final"`
	// Samples counts the periodic samples taken.
	Samples int `json:"samples"`
}

// MemorySample is one reading of the process's memory.
type MemorySample struct {
	// Percent of the drain done when the sample was taken (milestones only).
	Percent int `json:"percent,omitempty"`
	// Done is how many handlers had run.
	Done int64 `json:"done"`
	// RSS is VmRSS from /proc/self/status.
	RSS uint64 `json:"rss_bytes"`
	// HeapInuse is the Go heap in use: spans holding objects (runtime.MemStats.HeapInuse).
	HeapInuse uint64 `json:"heap_inuse_bytes"`
	// Seconds since the worker started.
	Seconds float64 `json:"seconds"`
}

// ReadRSS returns the process's resident set size (VmRSS) in bytes, 0 when it cannot
// be read (not Linux).
func ReadRSS() uint64 {
	self, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := self.NewStatus()
	if err != nil {
		return 0
	}
	return st.VmRSS
}

// heapMetrics add up to runtime.MemStats.HeapInuse, read without stopping the world.
var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}

// ReadHeapInuse returns the Go heap in use, in bytes.
func ReadHeapInuse() uint64 {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	var total uint64
	for _, m := range s {
		if m.Value.Kind() == metrics.KindUint64 {
			total += m.Value.Uint64()
		}
	}
	return total
}

// memorySampler keeps the peaks of periodic samples and records milestones.
type memorySampler struct {
	start time.Time
	done  func() int64

	mu  sync.Mutex
	mem Memory

	stopOnce sync.Once
	stopCh   chan struct{}
	stopped  chan struct{}
}

func newMemorySampler(done func() int64) *memorySampler {
	return &memorySampler{done: done, stopCh: make(chan struct{}), stopped: make(chan struct{})}
}

func (s *memorySampler) read(percent int) MemorySample {
	m := MemorySample{
		Percent:   percent,
		Done:      s.done(),
		RSS:       ReadRSS(),
		HeapInuse: ReadHeapInuse(),
		Seconds:   time.Since(s.start).Seconds(),
	}
	s.mu.Lock()
	s.mem.PeakRSS = max(s.mem.PeakRSS, m.RSS)
	s.mem.PeakHeap = max(s.mem.PeakHeap, m.HeapInuse)
	if percent > 0 {
		s.mem.Milestones = append(s.mem.Milestones, m)
	}
	s.mu.Unlock()
	return m
}

// begin records the start sample and starts periodic sampling.
func (s *memorySampler) begin() {
	s.start = time.Now()
	m := s.read(0)
	s.mu.Lock()
	s.mem.Start = m
	s.mu.Unlock()
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(sampleInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stopCh:
				return
			case <-t.C:
				s.read(0)
				s.mu.Lock()
				s.mem.Samples++
				s.mu.Unlock()
			}
		}
	}()
}

// milestone records a sample at percent of the drain.
func (s *memorySampler) milestone(percent int) { s.read(percent) }

// end stops sampling, takes the final sample and returns the record.
func (s *memorySampler) end() *Memory {
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.stopped
	final := s.read(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.Final = final
	mem := s.mem
	return &mem
}
