package sdk

// Creating groups: group_creates → CREATE_GROUP → GROUP_CREATED.
//
// CreateGroup (groups.go) only records the request (store.AddGroupCreate); the connection
// goroutine sends what is queued once reconciled, ahead of the pending sends, and again after
// every reconnect or restart with the same client_request_id, so the server's idempotency (the
// group id is derived from it) answers a retry of a created group with the original
// GROUP_CREATED. A request leaves the queue only with GROUP_CREATED or a definite refusal, the
// same rule as a send. Sends to a group whose create is queued wait for its answer (flushPending).

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

// maxCreatesInflight bounds the CREATE_GROUPs awaiting their answer on one connection.
const maxCreatesInflight = 8

// createScan is how many queued creates one flush looks at: every group among them holds its
// sends back. A user with more unconfirmed creates than this is not a case worth a second query.
const createScan = 256

type createState struct {
	inflight map[contract.U128]uint32 // CREATE_GROUP request id per client_request_id
	// held: a flush skipped a send because its group's create was queued; the next answer to a
	// create rewinds the send scan so the skipped sends are found again.
	held bool
}

// flushCreates sends the queued creates that are not in flight, up to the cap, and returns the
// groups whose create is still queued; ok is false when the connection failed meanwhile.
func (e *engine) flushCreates(now time.Time) (creating map[contract.ConversationID]bool, ok bool) {
	rows, err := e.st.QueuedGroupCreates(storeCtx, createScan)
	if err != nil {
		e.fail(fmt.Errorf("sdk: list group creates: %w", err))
		return nil, false
	}
	for i := range rows {
		g := &rows[i]
		if now.Sub(time.UnixMilli(g.CreatedAtMs)) > contract.ClientPendingMaxAge {
			e.expireCreate(g)
			continue
		}
		if creating == nil {
			creating = map[contract.ConversationID]bool{}
		}
		creating[g.Group] = true
		if _, busy := e.creates.inflight[g.ClientRequestID]; busy || len(e.creates.inflight) >= maxCreatesInflight {
			continue
		}
		crid := g.ClientRequestID.Bytes()
		members := make([]uint64, len(g.Members))
		for j, u := range g.Members {
			members[j] = uint64(u)
		}
		id := e.request(reqCreate, contract.OpCreateGroup, &qimv1.CreateGroup{ClientRequestId: crid[:], Name: g.Name,
			MemberUserIds: members}, now, &request{create: g})
		if id == 0 {
			return nil, false
		}
		e.creates.inflight[g.ClientRequestID] = id
	}
	return creating, e.end == nil
}

func (e *engine) expireCreate(g *store.GroupCreate) {
	ok, err := e.st.FailGroupCreate(storeCtx, g.ClientRequestID, contract.ErrCodeUnspecified, ErrPendingExpired.Error())
	if err != nil {
		e.fail(fmt.Errorf("sdk: expire group create: %w", err))
		return
	}
	if ok {
		e.emit(GroupCreateFailed{ClientRequestID: g.ClientRequestID, Group: g.Group, Err: ErrPendingExpired})
	}
}

// onGroupCreated removes the confirmed request from the queue and releases the group's sends.
func (e *engine) onGroupCreated(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqCreate)
	if r == nil {
		e.log.Debug("sdk: GROUP_CREATED for no create in flight")
		return
	}
	g := r.create
	delete(e.creates.inflight, g.ClientRequestID)
	var gc qimv1.GroupCreated
	if err := proto.Unmarshal(m.Payload, &gc); err != nil {
		e.fail(fmt.Errorf("%w: GROUP_CREATED: %v", ErrProtocol, err))
		return
	}
	if err := checkGroupCreated(&gc, g); err != nil {
		e.fail(err)
		return
	}
	ok, err := e.st.ResolveGroupCreate(storeCtx, g.ClientRequestID)
	if err != nil {
		// Still queued: the next connection asks again and gets the same answer.
		e.fail(fmt.Errorf("sdk: store GROUP_CREATED: %w", err))
		return
	}
	e.sendFails = 0
	if ok {
		e.emit(GroupCreated{ClientRequestID: g.ClientRequestID, Group: g.Group, MembershipVersion: gc.GetMembershipVersion()})
	}
	e.releaseHeld()
	e.flushPending(now)
}

// checkGroupCreated holds the answer to the request: the same client_request_id, and the group
// the SDK derived when it recorded the request (CreateGroup returned that id to the app).
func checkGroupCreated(gc *qimv1.GroupCreated, g *store.GroupCreate) error {
	crid, err := contract.U128FromBytes(gc.GetClientRequestId())
	if err != nil || crid != g.ClientRequestID {
		return fmt.Errorf("%w: GROUP_CREATED echoes another client_request_id", ErrProtocol)
	}
	raw, err := contract.U128FromBytes(gc.GetGroupId())
	if err != nil {
		return fmt.Errorf("%w: GROUP_CREATED group_id: %v", ErrProtocol, err)
	}
	if group, err := contract.GroupConversationID(raw); err != nil || group != g.Group {
		return fmt.Errorf("%w: GROUP_CREATED names group %s, the request derives %s", ErrProtocol, raw, g.Group)
	}
	if conv := gc.GetConversationId(); len(conv) > 0 {
		c, err := contract.ParseConversationID(conv)
		if err != nil || c != g.Group {
			return fmt.Errorf("%w: GROUP_CREATED conversation_id is not the group's", ErrProtocol)
		}
	}
	return nil
}

// onCreateError keeps a create queued on a retryable refusal (pausing sends and creates like a
// SEND's) and fails it for good otherwise.
func (e *engine) onCreateError(r *request, se *ServerError, now time.Time) {
	g := r.create
	delete(e.creates.inflight, g.ClientRequestID)
	switch {
	case se.Code == contract.ErrCodeUnauthorized:
		e.fail(se) // re-authenticate; the create stays queued
		return
	case se.Retryable():
		e.holdSends(se, r.sentAt, now)
		return
	}
	ok, err := e.st.FailGroupCreate(storeCtx, g.ClientRequestID, se.Code, se.Message)
	if err != nil {
		e.fail(fmt.Errorf("sdk: store group create failure: %w", err))
		return
	}
	if ok {
		e.emit(GroupCreateFailed{ClientRequestID: g.ClientRequestID, Group: g.Group, Code: se.Code, Err: se})
	}
	// The held sends go now and meet the server's verdict on a group that does not exist.
	e.releaseHeld()
	e.flushPending(now)
}

// releaseHeld rewinds the send scan past sends a queued create held back. Rows it finds again
// are in flight (skipped) or still need sending, so nothing goes twice.
func (e *engine) releaseHeld() {
	if e.creates.held {
		e.creates.held, e.dispatched = false, -1
	}
}
