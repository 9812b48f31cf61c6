package identity

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/redis/go-redis/v9"
)

// Issuer issues contract.MessageID values for one (region_id, writer_id) from persisted HLC
// windows. Next is the ConversationWriter's hot path; Start and Run talk to Redis.
//
// Invariants: every id is strictly greater than every id this Issuer issued before, and than
// every id any earlier Issuer of the same (region, writer) issued, whatever the wall clock does;
// an id's time_ms always lies in a window Redis acknowledged (appendfsync always) before it was
// installed; when no such window covers the HLC, Next refuses with ErrWindowExhausted.
// How: Start claims the first window synchronously; Run polls the Clock and claims the next
// window renew-before ahead of the end, retrying with backoff; Next is a mutex plus arithmetic
// on the Clock (no allocation, no Redis). With a lease, a lost lease stops Next and Run.
//
// Rejected alternative: a Redis INCR (or a claim) per message_id. It is simple and exact, but
// puts a round trip on every SEND and makes message_id issuance fail with the first Redis blip;
// a window amortises one round trip over 60 s and rides out a 20 s outage.
type Issuer struct {
	rdb    redis.Scripter
	region uint16
	writer uint16
	hlcKey string
	cfg    issuerConfig
	lost   <-chan struct{} // nil without a lease: receiving from nil never fires

	mu    sync.Mutex // guards clock
	clock Clock

	claimMu sync.Mutex // serialises claims (Start and Run); guards the claim id state
	claimer claimIDs
}

// NewIssuer prepares an Issuer; call Start before Next, then keep Run running.
func NewIssuer(rdb redis.Scripter, region, writer uint16, opts ...IssuerOption) (*Issuer, error) {
	var cfg issuerConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(region, writer); err != nil {
		return nil, err
	}
	tag, err := newOwner()
	if err != nil {
		return nil, err
	}
	i := &Issuer{
		rdb: rdb, region: region, writer: writer, cfg: cfg,
		hlcKey:  string(appendHLCKey(nil, region, writer)),
		clock:   *NewClock(cfg.renewBefore),
		claimer: claimIDs{tag: tag},
	}
	if cfg.lease != nil {
		i.lost = cfg.lease.Lost()
	}
	return i, nil
}

// Region is the region_id packed into every id.
func (i *Issuer) Region() uint16 { return i.region }

// WriterID is the writer_id packed into every id.
func (i *Issuer) WriterID() uint16 { return i.writer }

// Start claims the first window and returns once Redis persisted it and it is installed. It
// makes one attempt: a failure is returned (the writer should not serve without ids).
func (i *Issuer) Start(ctx context.Context) error {
	i.claimMu.Lock()
	defer i.claimMu.Unlock()
	if err := i.leaseErr(); err != nil {
		return err
	}
	i.mu.Lock()
	started := i.clock.hasCur
	i.mu.Unlock()
	if started {
		return ErrAlreadyStarted
	}
	return i.claimAndInstall(ctx)
}

// Next returns the next message_id. Safe for concurrent use; no Redis call, no allocation on
// success. Errors: *WindowExhaustedError (ErrWindowExhausted), ErrNoWindow before Start, and an
// ErrLeaseLost error once the lease (WithLease) is gone.
func (i *Issuer) Next() (contract.MessageID, error) {
	if err := i.leaseErr(); err != nil {
		return contract.MessageID{}, err
	}
	now := i.cfg.now().UnixMilli()
	i.mu.Lock()
	t, logical, err := i.clock.Next(now)
	i.mu.Unlock()
	if err != nil {
		return contract.MessageID{}, err
	}
	return i.pack(t, logical)
}

// NextBatch appends n ids to dst under one lock and one clock reading. On error, the returned
// slice holds the ids issued before it; they are unique and valid, to be used or dropped.
func (i *Issuer) NextBatch(dst []contract.MessageID, n int) ([]contract.MessageID, error) {
	if err := i.leaseErr(); err != nil {
		return dst, err
	}
	now := i.cfg.now().UnixMilli()
	i.mu.Lock()
	defer i.mu.Unlock()
	for range n {
		t, logical, err := i.clock.Next(now)
		if err != nil {
			return dst, err
		}
		id, err := i.pack(t, logical)
		if err != nil {
			return dst, err
		}
		dst = append(dst, id)
	}
	return dst, nil
}

// WindowRemaining is how long ids can still be issued if no further window is claimed: the
// gauge that warns before a Redis outage turns into refused SENDs.
func (i *Issuer) WindowRemaining() time.Duration {
	now := i.cfg.now().UnixMilli()
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.clock.Remaining(now)
}

// Horizon is the exclusive end (Unix ms) of the last installed window, 0 before Start.
func (i *Issuer) Horizon() uint64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.clock.Horizon()
}

func (i *Issuer) pack(t uint64, logical uint32) (contract.MessageID, error) {
	id, err := contract.NewMessageID(t, logical, i.region, i.writer)
	if err != nil { // unreachable: Install rejects windows outside the time field
		return contract.MessageID{}, fmt.Errorf("identity: pack message_id: %w", err)
	}
	return id, nil
}

// leaseErr is nil without a lease or while it is held. The non-blocking receive on an open
// channel takes no lock, so it costs the hot path a few nanoseconds.
func (i *Issuer) leaseErr() error {
	if i.lost == nil {
		return nil
	}
	select {
	case <-i.lost:
		return i.cfg.lease.Err()
	default:
		return nil
	}
}
