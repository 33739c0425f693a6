package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rotaqueue/rota/internal/store"
)

// dlqOutbox is the memory form of rota.dead_letters.dlq_pending and its partial index:
// the dead letters awaiting publication to the SQS dead-letter queue, and those handed
// to a publish that has not returned (the row locks of the PostgreSQL store, which other
// PublishDeadLetters calls skip). The zero value is ready to use.
type dlqOutbox struct {
	order      []int64        // ids in the order they were added (ascending), cleaned lazily
	pending    map[int64]bool // ids awaiting publication
	publishing map[int64]bool // handed out right now
}

func (o *dlqOutbox) add(id int64) {
	if o.pending == nil {
		o.pending = map[int64]bool{}
	}
	o.pending[id] = true
	o.order = append(o.order, id)
}

// PublishDeadLetters hands the dead letters awaiting publication to publish and marks the
// ones it reports; see store.Store. The store's mutex is not held while publish runs.
func (s *Store) PublishDeadLetters(ctx context.Context, p store.PublishParams,
	publish func(ctx context.Context, events []store.DeadLetter) ([]int64, error)) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("publish dead letters: %w", err)
	}
	if publish == nil {
		return 0, fmt.Errorf("publish dead letters: %w: publish is required", store.ErrInvalid)
	}

	s.mu.Lock()
	o := &s.outbox
	var events []store.DeadLetter
	live := o.order[:0]
	for _, id := range o.order {
		d := s.deadLetters[id-1]
		if !o.pending[id] || d == nil { // published, or deleted with its task by retention
			delete(o.pending, id)
			continue
		}
		live = append(live, id)
		if len(events) < p.Limit && !o.publishing[id] && slices.Contains(p.Queues, d.Queue) {
			events = append(events, *d)
		}
	}
	o.order = live
	if len(events) == 0 {
		s.mu.Unlock()
		return 0, nil
	}
	if o.publishing == nil {
		o.publishing = map[int64]bool{}
	}
	for _, d := range events {
		o.publishing[d.ID] = true
	}
	s.mu.Unlock()

	defer func() { // also when publish panics: release the rows, marking only what it reported
		s.mu.Lock()
		for _, d := range events {
			delete(o.publishing, d.ID)
		}
		s.mu.Unlock()
	}()
	reported, pubErr := publish(ctx, slices.Clone(events))
	if pubErr != nil {
		pubErr = fmt.Errorf("publish dead letters: publish: %w", pubErr)
	}
	if err := ctx.Err(); err != nil {
		// PostgreSQL's mark would fail now: nothing is marked, the events stay pending.
		return 0, errors.Join(fmt.Errorf("publish dead letters: mark: %w", err), pubErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range reported {
		if o.publishing[id] && o.pending[id] {
			delete(o.pending, id)
			n++
		}
	}
	return n, pubErr
}
