package sdk

// Reactions (ADR-0038): an aggregate per message, not messages. React needs the server now (it
// returns ErrOffline without a connection: a reaction queued for later would be a surprise) and
// is safe to repeat: adding a held reaction or removing one not held changes nothing. The
// conversation's participants' online devices get a ReactionChanged event; the counts are
// served with each message by the server's history.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// Reaction is one reaction of a message: Count users reacted with Key; Mine when the user is
// one of them (never set on a ReactionChanged event, which every recipient shares).
type Reaction struct {
	Key   string
	Count int
	Mine  bool
}

// ReactionChanged: User added (Removed false) or removed reaction Key on the message at Seq of
// Conversation; Reactions are the message's counts after it. Best effort.
type ReactionChanged struct {
	Conversation contract.ConversationID
	Seq          contract.ConversationSeq
	User         contract.UserID
	Key          string
	Removed      bool
	Reactions    []Reaction
}

func (ReactionChanged) isEvent() {}

// React adds (remove false) or removes the user's reaction key on m and returns m's reactions
// after it; changed is false when it changed nothing. Errors: ErrOffline without a connection,
// ErrInvalid for a bad key or a message that takes no reactions, ErrNotMember outside the
// conversation.
func (c *Client) React(ctx context.Context, m Message, key string, remove bool) (reactions []Reaction, changed bool, err error) {
	target, err := c.amendTarget(ctx, m)
	if err != nil {
		return nil, false, err
	}
	req := &qimv1.React{TargetSeq: uint64(m.Seq), Key: key, Remove: remove}
	if target.Group != (contract.ConversationID{}) {
		gid := target.Group.Bytes()
		req.Target = &qimv1.React_GroupId{GroupId: gid[:]}
	} else {
		req.Target = &qimv1.React_PeerUserId{PeerUserId: uint64(target.Peer)}
	}
	payload, err := c.call(ctx, contract.OpReact, contract.OpReactAck, req)
	if err != nil {
		return nil, false, err
	}
	var ack qimv1.ReactAck
	if err := proto.Unmarshal(payload, &ack); err != nil {
		return nil, false, fmt.Errorf("%w: REACT_ACK: %v", ErrProtocol, err)
	}
	if ack.GetTargetSeq() != uint64(m.Seq) {
		return nil, false, fmt.Errorf("%w: REACT_ACK for seq %d answers a REACT for %d", ErrProtocol, ack.GetTargetSeq(), m.Seq)
	}
	return reactionsOf(ack.GetReactions()), ack.GetChanged(), nil
}

func reactionsOf(rs []*qimv1.ReactionCount) []Reaction {
	out := make([]Reaction, len(rs))
	for i, r := range rs {
		out[i] = Reaction{Key: r.GetKey(), Count: int(r.GetCount()), Mine: r.GetMine()}
	}
	return out
}

// onReactionEvent announces a participant's reaction.
func (e *engine) onReactionEvent(m wire.Message) {
	var ev qimv1.ReactionEvent
	if err := proto.Unmarshal(m.Payload, &ev); err != nil {
		e.fail(fmt.Errorf("%w: REACTION_EVENT: %v", ErrProtocol, err))
		return
	}
	conv, err := contract.ParseConversationID(ev.GetConversationId())
	seq, serr := contract.NewConversationSeq(ev.GetTargetSeq())
	if err != nil || serr != nil || seq == 0 {
		e.fail(fmt.Errorf("%w: REACTION_EVENT for %x seq %d", ErrProtocol, ev.GetConversationId(), ev.GetTargetSeq()))
		return
	}
	e.emit(ReactionChanged{Conversation: conv, Seq: seq, User: contract.UserID(ev.GetUserId()), Key: ev.GetKey(),
		Removed: ev.GetRemoved(), Reactions: reactionsOf(ev.GetReactions())})
}
