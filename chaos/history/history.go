// Package history is the record of what the clients of a chaos cell saw: every send they
// invoked and how it ended, every message that reached them, and the durable history read
// after the cell. It is the checker's only input about the clients (chaos/check), written by
// the load generator's two lanes (loadgen and loadgen/sdklane) while they run.
//
// The vocabulary is Jepsen's: an invocation (Invoke) completes as ok (SEND_ACK), fail (a
// definite error: the message must never become visible) or info (unknown: timeout, lost
// connection, UNAVAILABLE/INTERNAL — it may or may not be visible, never twice). A later
// definite answer to the same send replaces an info, because it is the truth about the commit.
//
// A send is identified by (Lane, Sender, Ordinal): the per-sender counter every load message
// carries in its body, so a delivery names its send without trusting any server-assigned id.
//
// A send goes to one peer (Recipient) or to a group (Recipient zero, Conversation the group's
// conversation); the members of a group are recorded once, as Group events, when it is created.
package history

import (
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// Kind is what an event records.
type Kind uint8

// Kinds of events. The letters are the first field of the log's text form.
const (
	// Invoke: a send left the client (frame lane: SEND written; SDK lane: Send returned an id).
	Invoke Kind = iota + 1
	// Ok: SEND_ACK (SDK: Committed) with MessageID, Conversation and ConvSeq.
	Ok
	// Fail: a definite refusal (Code): never visible.
	Fail
	// Info: outcome unknown (Code is the error when one was answered, 0 for a timeout or a lost
	// connection). A later Ok or Fail of the same send overrides it.
	Info
	// Deliver: the message reached the application of Recipient through the durable path
	// (frame lane: an entry of a MAILBOX_BATCH, including the sender's own copies; SDK lane:
	// MessagesAdded after the SDK's dedup, App = true). MessageID, Conversation, ConvSeq and
	// (frame lane) MailboxSeq are set.
	Deliver
	// Push: a PUSH_EVENTS entry (best effort; informational, never proof of delivery).
	Push
	// Stored: a record of the conversation's durable history read after the cell
	// (PULL_HISTORY): Conversation, ConvSeq, MessageID, Sender and Ordinal (Ordinal only when
	// the body is a load message of this run; Foreign otherwise).
	Stored
	// Group: Recipient is a member of the group whose conversation is Conversation, as the
	// client that created it knows it (Sender: the creator), one event per member, written when
	// the group was created. Membership is static for a run, so these events are the expected
	// recipients of every send to the group.
	Group
)

var kindLetters = [...]string{Invoke: "I", Ok: "O", Fail: "F", Info: "U", Deliver: "D", Push: "P", Stored: "S", Group: "G"}

func (k Kind) String() string {
	if int(k) < len(kindLetters) && kindLetters[k] != "" {
		return kindLetters[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Lane says which client code produced an event.
type Lane uint8

// Lanes.
const (
	Frame Lane = iota + 1 // loadgen's frame-level connections
	SDK                   // loadgen/sdklane over the real SDK
)

func (l Lane) String() string {
	switch l {
	case Frame:
		return "f"
	case SDK:
		return "s"
	}
	return fmt.Sprintf("Lane(%d)", uint8(l))
}

// Event is one line of the history. Fields a kind does not use are zero.
type Event struct {
	Kind Kind
	// AtUs is when the client observed the event, Unix microseconds (one clock: the
	// load generator's).
	AtUs int64
	Lane Lane
	// Sender and Ordinal identify the send (Invoke/Ok/Fail/Info: the sender is the actor;
	// Deliver/Push/Stored: parsed from the message body).
	Sender  contract.UserID
	Ordinal uint64
	// Recipient is who the send was addressed to (Invoke/Ok/Fail/Info; zero for a send to a
	// group, whose Conversation is then the group's), whose application saw the message
	// (Deliver/Push; equal to Sender for an own copy) or the member a Group event names. Zero
	// for Stored.
	Recipient    contract.UserID
	MessageID    contract.MessageID
	Conversation contract.ConversationID
	ConvSeq      uint64
	MailboxSeq   uint64
	Code         contract.ErrorCode
	// App marks a delivery after the client's own dedup (the SDK lane's MessagesAdded): the
	// same message twice at App level is a duplicate, while a raw pull may legally repeat one.
	App bool
	// Foreign marks a Stored record whose body is not a load message of this run (Sender and
	// Ordinal are then meaningless).
	Foreign bool
}

// Key identifies one send across its events.
type Key struct {
	Lane    Lane
	Sender  contract.UserID
	Ordinal uint64
}

// Key returns the send the event is about.
func (e *Event) Key() Key { return Key{Lane: e.Lane, Sender: e.Sender, Ordinal: e.Ordinal} }

func (k Key) String() string { return fmt.Sprintf("%s:%d#%d", k.Lane, k.Sender, k.Ordinal) }
