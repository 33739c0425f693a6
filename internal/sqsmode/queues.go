package sqsmode

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/rotaqueue/rota/internal/store"
)

// Defaults of QueueConfig.
const (
	DefaultQueue = "rota"     // the SQS queue of Rota's default queue (ROTA_SQS_QUEUE)
	DefaultDLQ   = "rota-dlq" // the dead-letter queue (ROTA_SQS_DLQ)
)

// sqsNamePattern is what SQS accepts as a standard queue's name.
var sqsNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// QueueConfig says which SQS queues Rota uses.
type QueueConfig struct {
	// Queue is the SQS queue of Rota's "default" queue, as a name or a full queue URL;
	// Rota queue q uses "<Queue>-q" (with a URL: its last path segment suffixed).
	// Default: DefaultQueue.
	Queue string
	// DLQ is the dead-letter queue, a name or a full queue URL. Default: DefaultDLQ.
	DLQ string
	// Create creates missing queues (at start and whenever SQS reports one missing, as
	// after an emulator restart) instead of failing.
	Create bool
}

// Queues addresses the SQS queues of a set of Rota queues, and the DLQ, by the URL that
// SQS returned for them. Names are resolved with GetQueueUrl (or CreateQueue when
// creating) once, then cached until SQS reports the queue missing.
type Queues struct {
	client *sqs.Client
	create bool
	byRota map[string]*sqsQueue
	dlq    *sqsQueue
}

// CheckQueueNames reports whether every Rota queue in rotaQueues, and the DLQ, map to
// valid SQS queues under cfg, as NewQueues does, without a client: for checking flags.
func CheckQueueNames(cfg QueueConfig, rotaQueues []string) error {
	_, err := newQueues(nil, cfg, rotaQueues)
	return err
}

// NewQueues checks that every Rota queue in rotaQueues maps to a valid SQS queue. It
// sends nothing; Resolve does.
func NewQueues(client *sqs.Client, cfg QueueConfig, rotaQueues []string) (*Queues, error) {
	if client == nil {
		return nil, errors.New("sqs queues: a client is required")
	}
	return newQueues(client, cfg, rotaQueues)
}

func newQueues(client *sqs.Client, cfg QueueConfig, rotaQueues []string) (*Queues, error) {
	if len(rotaQueues) == 0 {
		return nil, errors.New("sqs queues: name at least one Rota queue")
	}
	if cfg.Queue == "" {
		cfg.Queue = DefaultQueue
	}
	if cfg.DLQ == "" {
		cfg.DLQ = DefaultDLQ
	}
	qs := &Queues{client: client, create: cfg.Create, byRota: make(map[string]*sqsQueue, len(rotaQueues))}
	var errs []error
	for _, rq := range rotaQueues {
		if err := store.ValidateName("queue", rq); err != nil {
			errs = append(errs, err)
			continue
		}
		q, err := newSQSQueue(client, cfg.Queue, rq, cfg.Create)
		if err != nil {
			errs = append(errs, fmt.Errorf("Rota queue %q: %w", rq, err))
			continue
		}
		qs.byRota[rq] = q
	}
	dlq, err := newSQSQueue(client, cfg.DLQ, store.DefaultQueue, cfg.Create)
	if err != nil {
		errs = append(errs, fmt.Errorf("dead-letter queue: %w", err))
	}
	qs.dlq = dlq
	if dlq != nil {
		for _, rq := range qs.RotaQueues() {
			if sameQueue(qs.byRota[rq], dlq) {
				errs = append(errs, fmt.Errorf("Rota queue %q maps to SQS queue %q, the dead-letter queue: "+
					"its workers would delete dead-letter events as poison; rename the queue or set ROTA_SQS_DLQ", rq, dlq.name))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sqs queues: %w", err)
	}
	return qs, nil
}

// Resolve looks up (or creates) the SQS queue of every Rota queue, and the DLQ when
// withDLQ, so that a missing queue or bad credentials fail at start, not later.
func (qs *Queues) Resolve(ctx context.Context, withDLQ bool) error {
	all := make([]*sqsQueue, 0, len(qs.byRota)+1)
	for _, rq := range qs.RotaQueues() {
		all = append(all, qs.byRota[rq])
	}
	if withDLQ {
		all = append(all, qs.dlq)
	}
	for _, q := range all {
		if _, err := q.url(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RotaQueues lists the Rota queues served, sorted.
func (qs *Queues) RotaQueues() []string {
	out := make([]string, 0, len(qs.byRota))
	for rq := range qs.byRota {
		out = append(out, rq)
	}
	slices.Sort(out)
	return out
}

// Name returns the SQS queue name of Rota queue rq ("" when rq is not served).
func (qs *Queues) Name(rq string) string {
	if q := qs.byRota[rq]; q != nil {
		return q.name
	}
	return ""
}

// forRota returns the SQS queue of Rota queue rq.
func (qs *Queues) forRota(rq string) (*sqsQueue, error) {
	q := qs.byRota[rq]
	if q == nil {
		return nil, fmt.Errorf("%w: Rota queue %q has no SQS queue here (it is not in the served queues)", store.ErrInvalid, rq)
	}
	return q, nil
}

// sqsQueue is one SQS queue: configured by name (resolved to a URL on first use) or by
// URL (used as given until SQS reports it missing and creating is on).
type sqsQueue struct {
	client *sqs.Client
	name   string
	create bool

	mu       sync.Mutex
	resolved string // the URL to address it by; "" until resolved
}

// newSQSQueue is the SQS queue for Rota queue rq given the default queue's name or URL:
// the base itself for "default", else the base suffixed with "-rq".
func newSQSQueue(client *sqs.Client, base, rq string, create bool) (*sqsQueue, error) {
	suffix := ""
	if rq != store.DefaultQueue {
		suffix = "-" + rq
	}
	if !isURL(base) {
		name := base + suffix
		if err := checkSQSName(name); err != nil {
			return nil, err
		}
		return &sqsQueue{client: client, name: name, create: create}, nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || path.Base(u.Path) == "/" || path.Base(u.Path) == "." {
		return nil, fmt.Errorf("%q is not a queue URL like https://sqs.us-east-1.amazonaws.com/123456789012/rota", base)
	}
	name := path.Base(u.Path) + suffix
	if err := checkSQSName(name); err != nil {
		return nil, err
	}
	u.Path = path.Join(path.Dir(u.Path), name)
	return &sqsQueue{client: client, name: name, create: create, resolved: u.String()}, nil
}

// sameQueue reports whether a and b may be one SQS queue. Two URLs are compared whole
// (one name in two accounts or regions is two queues); otherwise by name, as a name is
// resolved in the client's own account and region, where the other may well be.
func sameQueue(a, b *sqsQueue) bool {
	if a.resolved != "" && b.resolved != "" {
		return a.resolved == b.resolved
	}
	return a.name == b.name
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func checkSQSName(name string) error {
	if !sqsNamePattern.MatchString(name) {
		return fmt.Errorf("%q is not a valid SQS queue name (1 to 80 letters, digits, '-' or '_'; Rota uses standard queues, not FIFO)", name)
	}
	return nil
}

// url returns the queue's URL, resolving its name on first use.
func (q *sqsQueue) url(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.resolved != "" {
		return q.resolved, nil
	}
	u, err := q.lookUp(ctx)
	if err != nil {
		return "", err
	}
	q.resolved = u
	return u, nil
}

func (q *sqsQueue) lookUp(ctx context.Context) (string, error) {
	if q.create {
		out, err := q.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.name)})
		if err != nil {
			return "", fmt.Errorf("create SQS queue %q: %w", q.name, err)
		}
		return aws.ToString(out.QueueUrl), nil
	}
	out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
	if isQueueMissing(err) {
		return "", fmt.Errorf("SQS queue %q does not exist: create it, or pass --sqs-create-queues (ROTA_SQS_CREATE_QUEUES=true): %w", q.name, err)
	}
	if err != nil {
		return "", fmt.Errorf("find SQS queue %q: %w", q.name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// heal handles SQS reporting the queue at staleURL missing (it was deleted, or an
// emulator restarted empty): when creating is on, it creates the queue again and
// reports true, so the caller may retry with the new URL. Several callers may heal at
// once; CreateQueue of an existing queue returns it, so the race is harmless.
func (q *sqsQueue) heal(ctx context.Context, staleURL string) (bool, error) {
	if !q.create {
		return false, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.resolved != staleURL && q.resolved != "" {
		return true, nil // another caller already healed it
	}
	u, err := q.lookUp(ctx)
	if err != nil {
		return false, err
	}
	q.resolved = u
	return true, nil
}

// isQueueMissing reports whether err is SQS saying the queue does not exist.
func isQueueMissing(err error) bool {
	var missing *types.QueueDoesNotExist
	return errors.As(err, &missing)
}
