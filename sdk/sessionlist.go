package sdk

// The session list in the login sequence: PULL_SESSION_LIST, every page up to
// Config.SessionListMax, merged into the store — read watermarks forward only, conversations
// the device never saw recorded (store.MergeSessions).
//
// Where it sits: AUTH_OK → mailbox drained → session list → backfill → ready (pending sends,
// then the MARK_READs owed). After the mailbox, so only conversations the mailbox could not
// bring (a fresh device, a REBUILD whose entries were trimmed) are new to the store. Before the
// backfill, so such a conversation with messages after its read watermark is backfilled in the
// same reconciliation. Before ready, so the local watermarks the server turned out not to hold —
// a MarkRead made offline, on this or an earlier run — are sent once, by the ready flush.
//
// A failed page ends the merge for this login and reconciliation goes on without it: the list
// carries read state, and holding pending sends hostage to it would turn a session service
// outage into a send outage. MARK_READs owed do not depend on it (the store knows them), and
// the next login merges again. Rejected: retrying the list before going ready, for that reason.

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

// sessionPage is the PULL_SESSION_LIST limit: the server's maximum page, so a long list costs
// as few round trips as the server allows.
const sessionPage = 100

type sessionsState struct {
	id     uint32 // the PULL_SESSION_LIST in flight; 0 when none (an answer to another id is stale)
	merged int    // entries merged during this reconciliation
}

// startSessions pulls the first page of the session list.
func (e *engine) startSessions(now time.Time) {
	e.sess = sessionsState{}
	e.sync.phase = SyncSessions
	e.emit(SyncProgress{Phase: SyncSessions, Applied: e.sync.applied, Cursor: e.cursor})
	e.requestSessions(nil, now)
}

func (e *engine) requestSessions(token []byte, now time.Time) {
	limit := min(sessionPage, e.cfg.SessionListMax-e.sess.merged)
	id := e.request(reqSessions, contract.OpPullSessionList, &qimv1.PullSessionList{PageToken: token,
		Limit: uint32(limit)}, now, nil)
	if id != 0 {
		e.sess.id = id
		e.stats.sessionPulls.Add(1)
	}
}

// currentSessions reports whether an answer to request id belongs to the session pull in progress.
func (e *engine) currentSessions(id uint32) bool {
	return id != 0 && id == e.sess.id && e.phase == phaseSync && e.sync.phase == SyncSessions
}

func (e *engine) onSessionList(m wire.Message, now time.Time) {
	if e.take(m.RequestID, reqSessions) == nil || !e.currentSessions(m.RequestID) {
		e.log.Debug("sdk: SESSION_LIST_BATCH for no current request")
		return
	}
	e.sess.id = 0
	var b qimv1.SessionListBatch
	if err := proto.Unmarshal(m.Payload, &b); err != nil {
		e.fail(fmt.Errorf("%w: SESSION_LIST_BATCH: %v", ErrProtocol, err))
		return
	}
	states, err := sessionStates(b.GetSessions())
	if err != nil {
		e.fail(err)
		return
	}
	if !e.mergeSessions(states) {
		return
	}
	e.sess.merged += len(states)
	// An empty page or a missing token with has_more set would page forever: treat it as the end.
	if b.GetHasMore() && len(states) > 0 && len(b.GetNextPageToken()) > 0 && e.sess.merged < e.cfg.SessionListMax {
		e.requestSessions(b.GetNextPageToken(), now)
		return
	}
	e.reconcileGaps(now)
}

// onSessionsError goes on without the list (see the file comment).
func (e *engine) onSessionsError(id uint32, se *ServerError, now time.Time) {
	if !e.currentSessions(id) {
		return
	}
	e.sess.id = 0
	e.stats.sessionPullFailures.Add(1)
	e.log.Warn("sdk: session list unavailable; read state merges at the next login", "code", se.Code.String(),
		"merged", e.sess.merged)
	e.reconcileGaps(now)
}

// onSessionDelta merges pushed entries like a page (absolute values, forward only, so a lost or
// reordered delta only delays). The server pushes one after a MARK_READ on another device of the
// user; a missed one arrives with the next login's list.
func (e *engine) onSessionDelta(m wire.Message, now time.Time) {
	var d qimv1.SessionDelta
	if err := proto.Unmarshal(m.Payload, &d); err != nil {
		e.fail(fmt.Errorf("%w: SESSION_DELTA: %v", ErrProtocol, err))
		return
	}
	states, err := sessionStates(d.GetSessions())
	if err != nil {
		e.fail(err)
		return
	}
	if e.mergeSessions(states) {
		e.flushReads(now) // a delta reporting less than the device holds owes a MARK_READ
	}
}

// mergeSessions commits entries to the store and announces what changed; false when the store
// failed (the connection is dropped, and the next login merges again).
func (e *engine) mergeSessions(states []store.SessionState) bool {
	if len(states) == 0 {
		return true
	}
	mg, err := e.st.MergeSessions(storeCtx, states)
	if err != nil {
		e.fail(fmt.Errorf("sdk: merge session list: %w", err))
		return false
	}
	if len(mg.Conversations) > 0 {
		e.emit(ConversationsUpdated{Conversations: mg.Conversations})
	}
	if mg.Discovered+mg.Raised+mg.Ahead > 0 {
		e.log.Debug("sdk: session list merged", "entries", len(states), "discovered", mg.Discovered,
			"raised", mg.Raised, "ahead", mg.Ahead)
	}
	return true
}

// sessionStates validates and converts session entries; a malformed id or sequence is a
// protocol violation, never a conversation stored with a zero id.
func sessionStates(entries []*qimv1.SessionEntry) ([]store.SessionState, error) {
	out := make([]store.SessionState, 0, len(entries))
	for _, en := range entries {
		st, err := sessionState(en)
		if err != nil {
			return nil, fmt.Errorf("%w: session entry: %v", ErrProtocol, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func sessionState(en *qimv1.SessionEntry) (store.SessionState, error) {
	conv, err := contract.ParseConversationID(en.GetConversationId())
	if err != nil {
		return store.SessionState{}, err
	}
	latest, lerr := contract.NewConversationSeq(en.GetLatestConversationSeq())
	read, rerr := contract.NewConversationSeq(en.GetReadConversationSeq())
	if err := errors.Join(lerr, rerr); err != nil {
		return store.SessionState{}, err
	}
	if err := checkSessionGroup(en, conv); err != nil {
		return store.SessionState{}, err
	}
	st := store.SessionState{Conversation: conv, Peer: contract.UserID(en.GetPeerUserId()), LatestSeq: latest, ReadSeq: read}
	if h := en.GetHead(); len(h.GetMessageId()) > 0 {
		if st.LatestMessageID, err = contract.ParseMessageID(h.GetMessageId()); err != nil {
			return store.SessionState{}, err
		}
		if st.HeadSeq, err = contract.NewConversationSeq(h.GetConversationSeq()); err != nil {
			return store.SessionState{}, err
		}
		st.LastActivityMs = h.GetSentAtMs()
	}
	if raw := en.GetLastActivityId(); len(raw) > 0 {
		act, err := contract.ParseMessageID(raw)
		if err != nil {
			return store.SessionState{}, err
		}
		// The activity id is an HLC id: its time is when the conversation was last active, the
		// same clock the local list sorts by (a message's sent_at).
		st.LastActivityMs = max(st.LastActivityMs, int64(act.TimeMs()))
	}
	return st, nil
}

// checkSessionGroup holds a GROUP entry's group_id to its conversation: the two are the same 16
// bytes (the kind bits aside), and the store lists the conversation id as the group.
func checkSessionGroup(en *qimv1.SessionEntry, conv contract.ConversationID) error {
	raw := en.GetGroupId()
	if len(raw) == 0 {
		return nil
	}
	g, err := contract.U128FromBytes(raw)
	if err != nil {
		return err
	}
	if c, err := contract.GroupConversationID(g); err != nil || c != conv {
		return fmt.Errorf("group_id %s is not conversation %s", g, conv)
	}
	return nil
}
