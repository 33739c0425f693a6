package memory

// minHeap is a binary heap ordered by less (the least item on top).
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *minHeap[T]) Len() int { return len(h.items) }

func (h *minHeap[T]) Peek() T { return h.items[0] }

func (h *minHeap[T]) Push(v T) {
	h.items = append(h.items, v)
	h.up(len(h.items) - 1)
}

func (h *minHeap[T]) Pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	var zero T
	h.items[last] = zero // let the garbage collector have it
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

// Filter drops every item keep rejects and restores the heap order in O(n).
func (h *minHeap[T]) Filter(keep func(T) bool) {
	kept := h.items[:0]
	for _, v := range h.items {
		if keep(v) {
			kept = append(kept, v)
		}
	}
	var zero T
	for i := len(kept); i < len(h.items); i++ {
		h.items[i] = zero
	}
	h.items = kept
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *minHeap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *minHeap[T]) down(i int) {
	n := len(h.items)
	for {
		smallest := i
		if l := 2*i + 1; l < n && h.less(h.items[l], h.items[smallest]) {
			smallest = l
		}
		if r := 2*i + 2; r < n && h.less(h.items[r], h.items[smallest]) {
			smallest = r
		}
		if smallest == i {
			return
		}
		h.items[i], h.items[smallest] = h.items[smallest], h.items[i]
		i = smallest
	}
}
