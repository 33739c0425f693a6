package store

import (
	"context"
	"errors"
)

// HeartbeatEach extends p's leases one at a time with beat (a single-lease Heartbeat)
// and reports them as Store.HeartbeatMany does: a lost or unknown lease in its result,
// any other error for the whole call. For a store without a batch statement, and for the
// leases a batch statement leaves to a single heartbeat.
func HeartbeatEach(ctx context.Context, p HeartbeatManyParams, beat func(context.Context, HeartbeatParams) (*Task, error)) ([]HeartbeatResult, error) {
	results := make([]HeartbeatResult, len(p.Leases))
	for i, l := range p.Leases {
		results[i].TaskID = l.TaskID
		t, err := beat(ctx, HeartbeatParams{TaskID: l.TaskID, LeaseToken: l.LeaseToken, LeaseDuration: p.LeaseDuration})
		switch {
		case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound):
			results[i].Err = err
		case err != nil:
			return nil, err
		default:
			results[i].LeaseExpiresAt, results[i].CancelRequestedAt = *t.LeaseExpiresAt, t.CancelRequestedAt
		}
	}
	return results, nil
}
