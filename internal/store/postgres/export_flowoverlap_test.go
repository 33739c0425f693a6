package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

// ClaimSchedulesInTx is ClaimDueSchedules inside tx, which the test leaves open: both
// statements, then the flows of kind flow schedules (startScheduledFlows).
func ClaimSchedulesInTx(ctx context.Context, tx pgx.Tx, limit int) ([]store.ScheduleClaim, error) {
	if _, err := tx.Exec(ctx, claimSchedulesLockSQL(limit)); err != nil {
		return nil, err
	}
	claims, flows, err := claimSchedules(ctx, tx)
	if err != nil {
		return nil, err
	}
	return claims, startScheduledFlows(ctx, tx, claims, flows)
}
