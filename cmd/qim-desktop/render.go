package main

import (
	"errors"
	"strconv"
	"strings"
	"unicode"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// render prints one event; it reports true when the program must exit (a final kick).
func render(c *sdk.Client, con *console, ev sdk.Event) bool {
	switch e := ev.(type) {
	case sdk.Online:
		con.printf("[online] session %d", e.SessionEpoch)
	case sdk.Offline:
		switch {
		case e.Retry:
			con.printf("[offline] %v; retrying in %v", e.Err, e.RetryIn.Round(1e6))
		case errors.Is(e.Err, sdk.ErrKicked):
			// already reported by Kicked
		default:
			con.printf("[offline] %v", e.Err)
		}
	case sdk.MessagesAdded:
		for _, m := range e.Messages {
			switch {
			case sdk.IsMembership(m), isAmendment(m):
				// rendered from the MembershipChanged or MessagesAmended that follows
			case m.Conversation.Kind() == contract.KindGroup:
				con.printf("[group %s] %s", shortID(contract.U128(m.Conversation)), describe(c, m))
			default:
				con.printf("[msg] %s", describe(c, m))
			}
		}
	case sdk.MessagesAmended:
		for _, m := range e.Messages {
			con.printf("%s", describeAmended(c, m))
		}
	case sdk.MembershipChanged:
		con.printf("[group %s] %s", shortID(contract.U128(e.Group)), describeMembership(func(u contract.UserID) string {
			return userName(c, u)
		}, e))
	case sdk.GroupCreated:
		con.printf("[group created] %s (membership version %d)", e.Group, e.MembershipVersion)
	case sdk.GroupCreateFailed:
		con.printf("[group failed] %s: %v", shortID(contract.U128(e.Group)), e.Err)
	case sdk.Committed:
		con.printf("[delivered] %s as #%d", shortID(contract.U128(e.ClientMessageID)), e.Message.Seq)
	case sdk.Failed:
		con.printf("%s", describeFailed(e))
	case sdk.Kicked:
		con.printf("[kicked] reason %d: %s", e.Reason, printable([]byte(e.Detail)))
		return !e.Reconnect
	case sdk.SyncProgress:
		if e.Phase == sdk.SyncDone {
			con.printf("[synced] %d new", e.Applied)
		}
	case sdk.RoomJoined:
		con.printf("%s", describeRoomJoined(e))
	case sdk.RoomEvents:
		for _, line := range describeRoomEvents(c.User(), e) {
			con.printf("%s", line)
		}
	case sdk.RoomLeft:
		con.printf("%s", describeRoomLeft(e))
	case sdk.ReactionChanged:
		con.printf("%s", describeReaction(e))
	case sdk.LocalStoreReset:
		con.printf("[rebuild] mailbox cursor expired; refetching (generation %d)", e.Generation)
	}
	return false
}

// describeFailed renders a send that failed for good; one the product's moderation hook rejected
// shows the hook's reason code, which is what a user can act on.
func describeFailed(e sdk.Failed) string {
	id := shortID(contract.U128(e.ClientMessageID))
	var se *sdk.ServerError
	if errors.As(e.Err, &se) && se.Code == contract.ErrCodeRejected {
		return "[rejected] " + id + ": " + printable([]byte(se.Reason))
	}
	return "[failed] " + id + ": " + e.Err.Error()
}

// describe renders a message as "from USER: TEXT" (a membership change as "* USER added USER").
func describe(c *sdk.Client, m sdk.Message) string {
	who := "from " + strconv.FormatUint(uint64(m.Sender), 10)
	if m.Sender == c.User() {
		who = "you"
	}
	if mc, ok, err := sdk.DecodeMembership(m); ok {
		return describeMembership(func(u contract.UserID) string { return userName(c, u) },
			sdk.MembershipChanged{MembershipChange: mc, Err: err})
	}
	switch {
	case m.Flags&sdk.FlagRecalled != 0:
		return who + ": <recalled>"
	case m.Flags&sdk.FlagDeleted != 0:
		return who + ": <deleted>"
	case !m.HasBody:
		return who + ": <large message; /history to fetch>"
	case m.Type != contract.MessageText:
		return who + ": <" + m.Type.String() + " " + printable([]byte(m.CustomType)) + ">"
	}
	return who + ": " + printable(m.Body)
}

// printable keeps a peer's text from driving the terminal: control characters (escape
// sequences included) and invalid UTF-8 are replaced.
func printable(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, string(b))
}

func shortID(u contract.U128) string { return u.String()[:8] }
