package writer

// Amendments: recall, edit and delete (ADR-0037).
//
// A SEND with SendRequest.amend becomes a CONTROL message of the same conversation
// (contract.AmendCustomType, body qim.v1.MessageAmendment) committed through the ordinary
// pipeline under the client's client_message_id, so it is idempotent, gets a conversation_seq,
// reaches every device through the mailboxes and is archived like any message. The writer only
// adds what a plain SEND does not need: it reads the target before the commit (it must exist,
// not be CONTROL, and the actor must be allowed), and the commit's mark merges the amendment
// into the conversation's amendment index (msgstore), which every history and session read
// folds into what it returns.
//
// Invariants: a refused amendment commits nothing; the CONTROL body is a function of the
// request and the target alone, so a retry has the same idempotency identity; a retry of a
// committed amendment is answered with its SEND_ACK even when the check would now refuse it
// (the recall window passed, the message was deleted since).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// amendReq is a parsed SendRequest.amend.
type amendReq struct {
	target   uint64
	action   contract.AmendAction
	editBody []byte // EDIT: the new body as sent (the hook may rewrite it)
}

// parseAmend validates the amendment part of a SEND and turns c into its CONTROL message
// (the body is built once the target is read).
func parseAmend(c *sendCmd, req *qimv1.SendRequest) error {
	a := req.GetAmend()
	act := contract.AmendAction(a.GetAction())
	switch {
	case !act.Valid():
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "amend.action %d is not RECALL (1), EDIT (2) or DELETE (3)", a.GetAction())
	case a.GetTargetSeq() == 0:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "amend.target_seq is zero")
	case req.GetMessageType() != 0 || req.GetCustomType() != "" || len(req.GetMentions()) > 0:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "an amendment carries no message_type, custom_type or mentions")
	case act != contract.AmendEdit && len(req.GetBody()) > 0:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "only an EDIT carries a body")
	}
	c.amend = &amendReq{target: a.GetTargetSeq(), action: act, editBody: req.GetBody()}
	c.messageType, c.customType, c.body, c.mentions = uint32(contract.MessageControl), contract.AmendCustomType, nil, nil
	return nil
}

// submitAmend reads the target, checks the actor and commits the amendment.
func (s *Service) submitAmend(ctx context.Context, in *internalv1.AuthenticatedSend, cmd *sendCmd, done func(*qimv1.SendAck, error)) {
	target, err := s.amendTarget(ctx, cmd)
	if err != nil {
		s.refused("amend", err, done)
		return
	}
	refusal := s.mayAmend(ctx, cmd, target)
	if refusal == nil && cmd.amend.action == contract.AmendEdit && s.moderates(in) {
		refusal = s.moderateEdit(ctx, cmd, target)
	}
	if err := buildAmendment(cmd, target); err != nil {
		s.refused("amend", err, done)
		return
	}
	if refusal != nil {
		if refusal = s.unlessCommitted(ctx, cmd, refusal); refusal != nil {
			s.refused("amend", refusal, done)
			return
		}
	}
	s.commit(ctx, cmd, cmd.identity(), done)
}

// amendTarget reads the target as readers see it now (amendments applied). A group's actor
// must be a current member first, so a stranger learns nothing about the group's history.
func (s *Service) amendTarget(ctx context.Context, cmd *sendCmd) (*internalv1.MessageRecord, error) {
	if cmd.conversation.Kind() == contract.KindGroup {
		ms, err := s.store.MemberIntervals(ctx, cmd.tenant, cmd.sender, []contract.ConversationID{cmd.conversation})
		if err != nil {
			return nil, errors.Join(rpc.Refuse(contract.ErrCodeUnavailable, "membership read failed; retry"), err)
		}
		if !ms[0].Current() {
			return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a member of this group")
		}
	}
	page, err := s.store.HistoryPage(ctx, msgstore.HistoryQuery{Tenant: cmd.tenant, Conversation: cmd.conversation,
		Anchor: cmd.amend.target + 1, Direction: msgstore.Older, Limit: 1})
	if err != nil {
		return nil, errors.Join(rpc.Refuse(rpc.CodeOf(err), "the message to amend could not be read; retry"), err)
	}
	var r internalv1.MessageRecord
	if len(page.Records) == 0 || proto.Unmarshal(page.Records[0], &r) != nil || r.GetConversationSeq() != cmd.amend.target {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "no message at conversation_seq %d", cmd.amend.target)
	}
	return &r, nil
}

// mayAmend is the authorization: nil, or a FORBIDDEN refusal.
func (s *Service) mayAmend(ctx context.Context, cmd *sendCmd, target *internalv1.MessageRecord) error {
	own := contract.UserID(target.GetSenderUserId()) == cmd.sender
	switch {
	case contract.MessageType(target.GetMessageType()) == contract.MessageControl:
		return rpc.Refuse(contract.ErrCodeForbidden, "a CONTROL message cannot be amended")
	case cmd.amend.action == contract.AmendEdit && contract.Gone(target.GetFlags()):
		return rpc.Refuse(contract.ErrCodeForbidden, "a recalled or deleted message cannot be edited")
	case cmd.amend.action == contract.AmendRecall && own:
		sent := time.UnixMilli(target.GetCreatedAtMs())
		if age := time.Since(sent); age > s.cfg.RecallWindow {
			return rpc.Refuse(contract.ErrCodeForbidden, "the recall window (%s) has passed", s.cfg.RecallWindow)
		}
		return nil
	case own:
		return nil
	case cmd.amend.action == contract.AmendDelete && cmd.conversation.Kind() == contract.KindGroup:
		g, found, err := s.store.LoadGroup(ctx, cmd.tenant, cmd.conversation)
		if err != nil {
			return errors.Join(rpc.Refuse(contract.ErrCodeUnavailable, "group read failed; retry"), err)
		}
		if found && g.Owner == cmd.sender {
			return nil
		}
	}
	return rpc.Refuse(contract.ErrCodeForbidden, "only the sender (or, to delete, the group's owner) may %s this message",
		cmd.amend.action)
}

// moderateEdit asks the pre-send hook about an edit's new body, as it would about a SEND of it.
func (s *Service) moderateEdit(ctx context.Context, cmd *sendCmd, target *internalv1.MessageRecord) error {
	shadow := *cmd
	shadow.messageType, shadow.customType, shadow.body = target.GetMessageType(), target.GetCustomType(), cmd.amend.editBody
	if err := s.premoderate(ctx, &shadow); err != nil {
		return err
	}
	cmd.amend.editBody = shadow.body
	return nil
}

// buildAmendment fills the CONTROL message's body and the index merge from the target.
func buildAmendment(cmd *sendCmd, target *internalv1.MessageRecord) error {
	a := &qimv1.MessageAmendment{TargetSeq: cmd.amend.target, TargetMessageId: target.GetMessageId(),
		Action: uint32(cmd.amend.action), ActorUserId: uint64(cmd.sender)}
	if cmd.amend.action == contract.AmendEdit {
		a.Body = cmd.amend.editBody
		if a.Body == nil {
			a.Body = []byte{}
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(a)
	if err != nil {
		return rpc.Refuse(contract.ErrCodeInternal, "encode amendment: %v", err)
	}
	cmd.body = b
	cmd.retention = contract.RetentionClass(target.GetRetentionClass())
	return nil
}

// unlessCommitted returns refusal unless the idempotency key already holds a commit: a retry
// of a committed amendment goes on to the committer, which answers its SEND_ACK.
func (s *Service) unlessCommitted(ctx context.Context, cmd *sendCmd, refusal error) error {
	_, found, err := s.store.LoadCommit(ctx, cmd.key())
	switch {
	case err != nil:
		return errors.Join(rpc.Refuse(contract.ErrCodeUnavailable, "idempotency lookup failed; retry with the same client_message_id"), err)
	case found:
		return nil
	}
	return refusal
}

// markAmendment is the index merge of a committed amendment (nil for any other send). The
// index lives as long as the amendment's record, which carries its target's retention class and
// is younger than the target, so it outlives the target.
func (cmd *sendCmd) markAmendment(seq contract.ConversationSeq, mid contract.MessageID) *msgstore.Amendment {
	if cmd.amend == nil {
		return nil
	}
	var body []byte
	if cmd.amend.action == contract.AmendEdit {
		body = cmd.amend.editBody
	}
	return &msgstore.Amendment{Target: cmd.amend.target, Seq: uint64(seq), Flags: cmd.amend.action.Flag(),
		Body: body, ExpireAtMs: msgstore.RetentionEnd(cmd.retention, int64(mid.TimeMs()))}
}

// amendmentOfRecord is the index merge of a stored record, for the recovery loop, which has
// only the record: nil when the record is not an amendment. It equals what markAmendment gave
// the original call.
func amendmentOfRecord(b []byte) (*msgstore.Amendment, error) {
	var r internalv1.MessageRecord
	if err := proto.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("writer: stored record does not decode: %w", err)
	}
	if contract.MessageType(r.GetMessageType()) != contract.MessageControl || r.GetCustomType() != contract.AmendCustomType {
		return nil, nil
	}
	var a qimv1.MessageAmendment
	if err := proto.Unmarshal(r.GetBody(), &a); err != nil {
		return nil, fmt.Errorf("writer: stored amendment does not decode: %w", err)
	}
	act := contract.AmendAction(a.GetAction())
	return &msgstore.Amendment{Target: a.GetTargetSeq(), Seq: r.GetConversationSeq(), Flags: act.Flag(), Body: a.GetBody(),
		ExpireAtMs: msgstore.RetentionEnd(contract.RetentionClass(r.GetRetentionClass()), r.GetCreatedAtMs())}, nil
}
