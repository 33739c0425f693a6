package sqsmode

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/validate"
)

// Defaults of SourceConfig.
const (
	DefaultWaitSeconds = 20 // SQS's longest long poll: fewest empty receives
	// busyWaitSeconds is the long poll of a receive for which the runtime reserved slots
	// (Fetch): a busy queue's receives return at once anyway, and a queue that ran dry
	// gives its slots back within it, then waits in FetchIdle holding none.
	busyWaitSeconds = 1
	// DefaultRetryDelay hides a message whose task is not claimable for a reason that
	// should pass in moments (its enqueuer has not committed yet, say).
	DefaultRetryDelay  = 5 * time.Second
	DefaultCallTimeout = 10 * time.Second
	// maxReceives bounds how often one message is hidden and looked at again. Past it
	// the message is deleted: the enqueuer sends the task again whenever the database
	// says it needs a message, so a message that never becomes claimable is just noise.
	maxReceives = 50
	// ackSlots and extendSlots bound the background SQS calls in flight (background.go).
	ackSlots    = 16
	extendSlots = 64
)

// SourceConfig configures a Source.
type SourceConfig struct {
	Store  store.Store // required
	Client *sqs.Client // required
	Queues *Queues     // required: the SQS queues of the Rota queues the worker serves
	// WorkerID is written into claimed tasks; it must be the worker's own
	// (runtime.Config.WorkerID: pass Source.WorkerID there). Default:
	// "<hostname>-<pid>-<6 random hex digits>", the runtime's format.
	WorkerID string
	// LeaseDuration is the lease of each claim and the visibility timeout of each
	// received message. Must be the worker's (runtime.Config.LeaseDuration).
	// Default: runtime.DefaultLeaseDuration.
	LeaseDuration time.Duration
	// WaitSeconds is the long poll of an idle queue's receive (FetchIdle, holding no
	// slot), 1 to 20; a receive with slots reserved waits at most 1 s. Default:
	// DefaultWaitSeconds.
	WaitSeconds int
	// RetryDelay is how long a message whose task is unexpectedly unclaimable (PENDING,
	// or due yet not claimed) stays hidden before it is looked at again.
	// Default: DefaultRetryDelay.
	RetryDelay time.Duration
	// CallTimeout bounds each claim, delete and visibility change. Default: DefaultCallTimeout.
	CallTimeout time.Duration

	Metrics *Metrics     // default: NewMetrics(nil)
	Logger  *slog.Logger // default: slog.Default()
}

// NewSource checks cfg and fills its defaults.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.WorkerID == "" {
		cfg.WorkerID = runtime.DefaultWorkerID()
	}
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, runtime.DefaultLeaseDuration)
	cfg.WaitSeconds = cmp.Or(cfg.WaitSeconds, DefaultWaitSeconds)
	cfg.RetryDelay = cmp.Or(cfg.RetryDelay, DefaultRetryDelay)
	cfg.CallTimeout = cmp.Or(cfg.CallTimeout, DefaultCallTimeout)
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())

	// Every problem at once, not one per attempt.
	var problems validate.Problems
	check := problems.Check
	check(cfg.Store != nil, "Store is required")
	check(cfg.Client != nil, "Client is required")
	check(cfg.Queues != nil, "Queues is required")
	check(cfg.LeaseDuration >= time.Second && cfg.LeaseDuration <= maxVisibility,
		"LeaseDuration must be between 1s and 12h (SQS's visibility timeout range), got %s", cfg.LeaseDuration)
	check(cfg.WaitSeconds >= 1 && cfg.WaitSeconds <= 20, "WaitSeconds must be between 1 and 20, got %d", cfg.WaitSeconds)
	check(cfg.RetryDelay > 0, "RetryDelay must be positive, got %s", cfg.RetryDelay)
	check(cfg.CallTimeout > 0, "CallTimeout must be positive, got %s", cfg.CallTimeout)
	if err := problems.Err(); err != nil {
		return nil, fmt.Errorf("%w: sqs source config: %w", store.ErrInvalid, err)
	}

	log := cfg.Logger.With("component", "sqs-source", "worker_id", cfg.WorkerID)
	s := &Source{cfg: cfg, client: cfg.Client, queues: cfg.Queues, metrics: cfg.Metrics, log: log,
		acks: newBackground(ackSlots), extends: newBackground(extendSlots)}
	s.extendsBatch = &extendBatcher{src: s}
	s.claims = make(map[string]*claimBatcher)
	for _, rq := range cfg.Queues.RotaQueues() {
		s.claims[rq] = &claimBatcher{claim: func(ctx context.Context, ids []uuid.UUID) ([]*store.Task, store.ClaimReport, error) {
			return s.claimIDs(ctx, rq, ids)
		}}
	}
	return s, nil
}

// WorkerID is the id the source claims tasks for: the worker's runtime.Config.WorkerID.
func (s *Source) WorkerID() string { return s.cfg.WorkerID }

// LeaseDuration is the lease of the source's claims: the worker's
// runtime.Config.LeaseDuration.
func (s *Source) LeaseDuration() time.Duration { return s.cfg.LeaseDuration }
