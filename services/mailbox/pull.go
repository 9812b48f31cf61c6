package mailbox

// Mailbox pull: why it is the only cursor advance.
//
// A device cursor says "everything up to this mailbox_seq is durably applied on the device". Only
// the device can know that, so only the device moves it: PULL_MAILBOX carries the cursor of what
// the device applied from the previous MAILBOX_BATCH, and this node records exactly that value
// (forward only) before answering with the entries after it. PUSH_EVENTS never moves a cursor:
// a push is best effort, may be dropped, duplicated or overtaken, and a cursor advanced by a push
// the device never stored would skip entries for good.
//
// The answer is bounded by the shard watermark (entries are only ever written together with it,
// so nothing half-materialized is visible), split only on mailbox_seq boundaries (an event group
// is never torn), and starts BELOW log offset 0 for the zero cursor (the first record of every
// dispatch partition was once invisible to offline pulls). A cursor behind the user's trim mark
// is answered with cursor_expired and the cursor to resume from: the device REBUILDs instead of
// silently skipping what retention deleted.

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// Pull bounds. Defaults serve a phone catching up after a day offline in a few round trips; the
// byte cap keeps a MAILBOX_BATCH inside one frame (contract.MaxFramePayload).
const (
	pullLimitDefault    = 100
	pullLimitMax        = 1000
	pullMaxBytesDefault = 1 << 20
	pullMaxBytesMax     = contract.MaxFramePayload
	deviceIDMaxBytes    = 64
	pullTimeout         = 5 * time.Second
)

type pullRequest struct {
	tenant   contract.TenantID
	user     contract.UserID
	device   string
	cursor   contract.MailboxSeq
	limit    int
	maxBytes int
}

func parsePull(in *internalv1.AuthenticatedPullMailbox) (pullRequest, error) {
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil {
		return pullRequest{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	dev := in.GetDeviceId()
	if dev == "" || len(dev) > deviceIDMaxBytes || !utf8.ValidString(dev) {
		return pullRequest{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "device_id must be 1..%d bytes of UTF-8", deviceIDMaxBytes)
	}
	var req qimv1.PullMailbox
	if err := proto.Unmarshal(in.GetPullMailbox(), &req); err != nil {
		return pullRequest{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "PULL_MAILBOX payload: %v", err)
	}
	cursor, err := contract.NewMailboxSeq(req.GetCursor().GetMailboxSeq())
	if err != nil {
		return pullRequest{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "cursor: %v", err)
	}
	return pullRequest{tenant: tenant, user: contract.UserID(in.GetUserId()), device: dev, cursor: cursor,
		limit:    clamp(int(req.GetLimit()), pullLimitDefault, pullLimitMax),
		maxBytes: clamp(int(req.GetMaxBytes()), pullMaxBytesDefault, pullMaxBytesMax)}, nil
}

func clamp(v, def, max int) int {
	switch {
	case v <= 0:
		return def
	case v > max:
		return max
	}
	return v
}

// pullMany serves PULL_MAILBOX requests (each records its cursor as the device's cursor and gets
// the entries after it) with one store round trip; batches[i] or errs[i]
// answers ins[i], and one pull's error never fails another (a pull of a user on a shard this node
// does not own is refused on its own, see owned). A failed round trip fails every
// pull that reached the store, each as UNAVAILABLE through rpc.CodeOf (retryable: a stored
// cursor only moves forward).
func (s *Service) pullMany(ctx context.Context, ins []*internalv1.AuthenticatedPullMailbox) ([]*qimv1.MailboxBatch, []error) {
	batches, errs := make([]*qimv1.MailboxBatch, len(ins)), make([]error, len(ins))
	qs := make([]mailboxstore.PullQuery, 0, len(ins))
	idx := make([]int, 0, len(ins)) // qs[k] answers ins[idx[k]]
	for i, in := range ins {
		q, err := parsePull(in)
		if err == nil {
			err = s.owned(q.tenant, q.user)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		qs = append(qs, mailboxstore.PullQuery{Tenant: q.tenant, User: q.user, Device: q.device,
			Cursor: q.cursor, Limit: q.limit, MaxBytes: q.maxBytes, StoreCursor: true})
		idx = append(idx, i)
	}
	if len(qs) == 0 {
		return batches, errs
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	res, qerrs, err := s.store.PullMany(ctx, qs)
	for k, i := range idx {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("mailbox: pull: %w", err)
		case qerrs[k] != nil:
			errs[i] = fmt.Errorf("mailbox: pull: %w", qerrs[k])
		default:
			batches[i], errs[i] = batchOf(res[k])
		}
	}
	return batches, errs
}

// batchOf turns a store result into the MAILBOX_BATCH the device gets.
func batchOf(res mailboxstore.PullResult) (*qimv1.MailboxBatch, error) {
	batch := &qimv1.MailboxBatch{NextCursor: &qimv1.MailboxCursor{MailboxSeq: uint64(res.Next)},
		HasMore: res.HasMore, CursorExpired: res.Expired}
	batch.Entries = make([]*qimv1.MailboxEvent, 0, len(res.Entries))
	for _, se := range res.Entries {
		var e internalv1.MailboxEntry
		if err := proto.Unmarshal(se.Value, &e); err != nil || e.GetMailboxSeq() != uint64(se.Seq) {
			return nil, fmt.Errorf("%w: seq %d", ErrCorruptEntry, se.Seq)
		}
		batch.Entries = append(batch.Entries, eventOf(&e))
	}
	if n := proto.Size(batch); n > contract.MaxFramePayload {
		return nil, rpc.Refuse(contract.ErrCodeInternal, "mailbox batch of %d bytes exceeds the frame limit", n)
	}
	return batch, nil
}

// hasOffline answers AUTH_OK.has_offline_data: an entry above the cursor, or an expired cursor
// (the device must REBUILD, which is offline data too). It does not record the cursor.
func (s *Service) hasOffline(ctx context.Context, in *internalv1.OfflineQuery) (bool, error) {
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil {
		return false, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	cursor, err := contract.NewMailboxSeq(in.GetCursor())
	if err != nil {
		return false, rpc.Refuse(contract.ErrCodeInvalidArgument, "cursor: %v", err)
	}
	user := contract.UserID(in.GetUserId())
	if err := s.owned(tenant, user); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	res, err := s.store.Pull(ctx, mailboxstore.PullQuery{Tenant: tenant, User: user, Cursor: cursor, Limit: 1, MaxBytes: 1})
	if err != nil {
		return false, fmt.Errorf("mailbox: offline check: %w", err)
	}
	return res.Expired || len(res.Entries) > 0, nil
}

// owned refuses, UNAVAILABLE and before anything is read or written, a user whose shard this
// node does not own. Only the owner materializes the shard and knows its watermark is caught up;
// another node would answer from whatever the shared Redis holds, possibly a shard nobody is
// materializing any more, and record a cursor against it. Misrouting happens while shards move
// between nodes by restart and the gateways' routing lags, so the gateway retries at the owner.
func (s *Service) owned(tenant contract.TenantID, user contract.UserID) error {
	shard := s.cfg.shards().UserShard(tenant, user)
	if s.cfg.OwnedShards.Contains(shard) {
		return nil
	}
	s.m.unowned.Inc()
	return fmt.Errorf("%w: %w", errNotOwned, rpc.Refuse(contract.ErrCodeUnavailable,
		"the request reached the wrong MailboxNode: shard %d is not owned by this node; retry", shard))
}

// errNotOwned marks owned's refusal, so the pull counter tells a misrouted pull from a failed one.
var errNotOwned = errors.New("mailbox: shard not owned")
