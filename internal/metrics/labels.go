package metrics

import "sync"

// MaxLabelValues bounds the distinct values of the queue label, and separately of the
// kind label, that one Metrics exports; see the package doc.
const MaxLabelValues = 100

// otherLabel stands for every value past MaxLabelValues.
const otherLabel = "_other"

// labelValues admits the first limit distinct values of one label and maps later new
// ones to otherLabel. Reads of admitted values take no lock.
type labelValues struct {
	limit int
	seen  sync.Map // string -> struct{}
	mu    sync.Mutex
	n     int // admitted values; guarded by mu
}

func newLabelValues(limit int) *labelValues {
	return &labelValues{limit: limit}
}

func (l *labelValues) get(v string) string {
	if _, ok := l.seen.Load(v); ok {
		return v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen.Load(v); ok {
		return v
	}
	if l.n >= l.limit {
		return otherLabel
	}
	l.seen.Store(v, struct{}{})
	l.n++
	return v
}
