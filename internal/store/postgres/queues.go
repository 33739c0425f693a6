package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

var sqlUpdateQueueSettings = query("queue_settings_update.sql")

const queueSettingsColumns = `name, paused, concurrency, rate_limit, rate_per_seconds,
	group_concurrency, group_rate_limit, group_rate_per_seconds, updated_at`

// GetQueueSettings returns a queue's settings; see store.QueueSettingsStore.
func (s *Store) GetQueueSettings(ctx context.Context, queue string) (*store.QueueSettings, error) {
	if err := store.ValidateName("queue", queue); err != nil {
		return nil, fmt.Errorf("get queue settings: %w", err)
	}
	q, err := scanQueueSettings(s.pool.QueryRow(ctx,
		`SELECT `+queueSettingsColumns+` FROM rota.queues WHERE name = $1`, queue))
	if errors.Is(err, pgx.ErrNoRows) {
		return &store.QueueSettings{Queue: queue}, nil
	}
	if err != nil {
		return nil, translate("get queue settings", err)
	}
	return q, nil
}

// UpdateQueueSettings applies a patch; see store.QueueSettingsStore.
func (s *Store) UpdateQueueSettings(ctx context.Context, queue string, patch store.QueuePatch) (*store.QueueSettings, error) {
	if err := store.ValidateName("queue", queue); err != nil {
		return nil, fmt.Errorf("update queue settings: %w", err)
	}
	if err := patch.Validate(); err != nil {
		return nil, fmt.Errorf("update queue settings: %w", err)
	}
	setPaused, paused := patch.Paused != nil, pgtype.Bool{}
	if setPaused {
		paused = pgtype.Bool{Bool: *patch.Paused, Valid: true}
	}
	setConc, conc := countArg(patch.Concurrency)
	setRate, rateLimit, ratePer := rateArgs(patch.Rate)
	setGroupConc, groupConc := countArg(patch.GroupConcurrency)
	setGroupRate, groupLimit, groupPer := rateArgs(patch.GroupRate)
	q, err := scanQueueSettings(s.pool.QueryRow(ctx, sqlUpdateQueueSettings, queue,
		setPaused, paused, setConc, conc, setRate, rateLimit, ratePer,
		setGroupConc, groupConc, setGroupRate, groupLimit, groupPer))
	if err != nil {
		return nil, translate("update queue settings", err)
	}
	return q, nil
}

// ListQueueSettings returns every configured queue; see store.QueueSettingsStore.
func (s *Store) ListQueueSettings(ctx context.Context) ([]*store.QueueSettings, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+queueSettingsColumns+` FROM rota.queues ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, translate("list queue settings", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.QueueSettings, error) {
		return scanQueueSettings(row)
	})
	if err != nil {
		return nil, translate("list queue settings", err)
	}
	return out, nil
}

func scanQueueSettings(row pgx.Row) (*store.QueueSettings, error) {
	var (
		q                                       store.QueueSettings
		conc, rateLimit, ratePer                pgtype.Int4
		groupConc, groupRateLimit, groupRatePer pgtype.Int4
		updatedAt                               pgtype.Timestamptz
	)
	if err := row.Scan(&q.Queue, &q.Paused, &conc, &rateLimit, &ratePer, &groupConc,
		&groupRateLimit, &groupRatePer, &updatedAt); err != nil {
		return nil, err
	}
	q.Concurrency, q.GroupConcurrency = intPtr(conc), intPtr(groupConc)
	q.Rate, q.GroupRate = ratePtr(rateLimit, ratePer), ratePtr(groupRateLimit, groupRatePer)
	q.UpdatedAt = timePtr(updatedAt)
	return &q, nil
}

func intPtr(v pgtype.Int4) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int32)
	return &n
}

func ratePtr(limit, per pgtype.Int4) *store.RateLimit {
	if !limit.Valid || !per.Valid {
		return nil
	}
	return &store.RateLimit{Limit: int(limit.Int32), PerSeconds: int(per.Int32)}
}

// countArg is a limit change as the update's (set, value) arguments.
func countArg(c *store.Change[int]) (bool, pgtype.Int4) {
	if c == nil || c.To == nil {
		return c != nil, pgtype.Int4{}
	}
	return true, pgtype.Int4{Int32: int32(*c.To), Valid: true}
}

// rateArgs is a rate change as the update's (set, limit, per_seconds) arguments.
func rateArgs(c *store.Change[store.RateLimit]) (bool, pgtype.Int4, pgtype.Int4) {
	if c == nil || c.To == nil {
		return c != nil, pgtype.Int4{}, pgtype.Int4{}
	}
	return true, pgtype.Int4{Int32: int32(c.To.Limit), Valid: true},
		pgtype.Int4{Int32: int32(c.To.PerSeconds), Valid: true}
}
