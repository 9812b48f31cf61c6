package contract

import "fmt"

// Amendments (ADR-0037): a recall, edit or delete of a committed message is itself a CONTROL
// message of the conversation, with its own conversation_seq, committed through the same
// idempotent SEND path. Stored records are never rewritten; readers apply the amendment index.

// AmendAction is the raw u32 action of an amendment (qim.v1.Amend.action).
type AmendAction uint32

const (
	AmendRecall AmendAction = 1 // the sender takes the message back, within AmendRecallWindow
	AmendEdit   AmendAction = 2 // the sender replaces the body
	AmendDelete AmendAction = 3 // the sender or the group's owner removes it for everyone
)

func (a AmendAction) String() string {
	switch a {
	case AmendRecall:
		return "RECALL"
	case AmendEdit:
		return "EDIT"
	case AmendDelete:
		return "DELETE"
	}
	return fmt.Sprintf("ACTION(%d)", uint32(a))
}

// Valid reports whether the action is one this contract defines.
func (a AmendAction) Valid() bool { return a >= AmendRecall && a <= AmendDelete }

// Flag is the amended state a reader sees on a message (MessageRecord.flags,
// HistoryMessage.flags). Unknown bits must be ignored.
const (
	FlagRecalled uint32 = 1
	FlagDeleted  uint32 = 2
	FlagEdited   uint32 = 4
)

// Flag is the bit an action sets.
func (a AmendAction) Flag() uint32 {
	switch a {
	case AmendRecall:
		return FlagRecalled
	case AmendDelete:
		return FlagDeleted
	case AmendEdit:
		return FlagEdited
	}
	return 0
}

// Gone reports whether flags hide the message's body (recalled or deleted): such a message is
// never unread and never shows a body, whatever was edited before.
func Gone(flags uint32) bool { return flags&(FlagRecalled|FlagDeleted) != 0 }
