package runtime

import "sync"

// capacity counts handler slots, in total and per queue. A fetcher reserves slots before
// it claims, so concurrent fetchers can never together claim more than is free.
type capacity struct {
	mu     sync.Mutex
	total  int
	used   int
	queues map[string]*queueSlots
}

type queueSlots struct {
	limit int
	used  int
	freed chan struct{} // signalled (non-blocking, buffer 1) when any slot frees up
}

func newCapacity(total int, limits map[string]int) *capacity {
	c := &capacity{total: total, queues: make(map[string]*queueSlots, len(limits))}
	for q, l := range limits {
		c.queues[q] = &queueSlots{limit: l, freed: make(chan struct{}, 1)}
	}
	return c
}

// reserve takes up to want slots for queue q and returns how many it took (maybe 0).
func (c *capacity) reserve(q string, want int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	qs := c.queues[q]
	n := min(want, c.total-c.used, qs.limit-qs.used)
	if n <= 0 {
		return 0
	}
	c.used += n
	qs.used += n
	return n
}

// release gives back n slots of queue q and wakes the fetchers: a slot of the worker's
// total may be the one another queue was waiting for.
func (c *capacity) release(q string, n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.used -= n
	c.queues[q].used -= n
	c.mu.Unlock()
	for _, qs := range c.queues {
		select {
		case qs.freed <- struct{}{}:
		default:
		}
	}
}

// free reports how many slots queue q could reserve now.
func (c *capacity) free(q string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	qs := c.queues[q]
	return max(0, min(c.total-c.used, qs.limit-qs.used))
}

// limit is the most slots queue q can ever hold.
func (c *capacity) limit(q string) int {
	return min(c.total, c.queues[q].limit)
}

// signalFreed wakes a loop waiting on queue q's freed channel, without blocking.
func (c *capacity) signalFreed(q string) {
	select {
	case c.queues[q].freed <- struct{}{}:
	default:
	}
}

// freed returns the channel signalled when a slot frees up, for queue q's fetcher.
func (c *capacity) freed(q string) <-chan struct{} { return c.queues[q].freed }

// inUse reports how many slots queue q holds now: reserved by its fetchers or running
// its handlers.
func (c *capacity) inUse(q string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queues[q].used
}
