package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Recall, edit and delete in a direct conversation: /recall USER SEQ, /edit USER SEQ TEXT,
// /delete USER SEQ name the message by its #seq as printed by /history.

// cmdAmend runs /recall, /edit or /delete.
func cmdAmend(ctx context.Context, c *sdk.Client, con *console, act contract.AmendAction, rest string) {
	usage := map[contract.AmendAction]string{contract.AmendRecall: "/recall USER SEQ",
		contract.AmendEdit: "/edit USER SEQ TEXT", contract.AmendDelete: "/delete USER SEQ"}[act]
	m, text, err := amendTarget(ctx, c, rest, act == contract.AmendEdit)
	if err != nil {
		con.printf("usage: %s (%v)", usage, err)
		return
	}
	var cmid contract.ClientMessageID
	switch act {
	case contract.AmendRecall:
		cmid, err = c.Recall(ctx, m)
	case contract.AmendEdit:
		cmid, err = c.Edit(ctx, m, []byte(text))
	default:
		cmid, err = c.Delete(ctx, m)
	}
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("[queued] %s of #%d as %s", strings.ToLower(act.String()), m.Seq, shortID(contract.U128(cmid)))
}

// amendTarget parses "USER SEQ [TEXT]" and finds the message in the local store.
func amendTarget(ctx context.Context, c *sdk.Client, rest string, wantText bool) (sdk.Message, string, error) {
	f := strings.SplitN(rest, " ", 3)
	if len(f) < 2 || (wantText && (len(f) < 3 || strings.TrimSpace(f[2]) == "")) {
		return sdk.Message{}, "", fmt.Errorf("missing arguments")
	}
	peer, err := parseUser(f[0])
	if err != nil {
		return sdk.Message{}, "", err
	}
	seq, err := strconv.ParseUint(strings.TrimPrefix(f[1], "#"), 10, 63)
	if err != nil || seq == 0 {
		return sdk.Message{}, "", fmt.Errorf("SEQ must be a message's #number, got %q", f[1])
	}
	msgs, _, err := c.LocalMessages(ctx, c.DirectConversation(peer), contract.ConversationSeq(seq-1), sdk.Newer, 1)
	if err != nil {
		return sdk.Message{}, "", err
	}
	if len(msgs) == 0 || msgs[0].Seq != contract.ConversationSeq(seq) {
		return sdk.Message{}, "", fmt.Errorf("no message #%d with %d on this device (/history %d)", seq, peer, peer)
	}
	text := ""
	if len(f) == 3 {
		text = f[2]
	}
	return msgs[0], text, nil
}

// describeAmended renders a message an amendment changed.
func describeAmended(c *sdk.Client, m sdk.Message) string {
	what := "edited"
	switch {
	case m.Flags&sdk.FlagRecalled != 0:
		what = "recalled"
	case m.Flags&sdk.FlagDeleted != 0:
		what = "deleted"
	}
	return fmt.Sprintf("[%s] #%d %s", what, m.Seq, describe(c, m))
}

// isAmendment reports an amendment's own CONTROL message (rendered from MessagesAmended).
func isAmendment(m sdk.Message) bool {
	return m.Type == contract.MessageControl && m.CustomType == contract.AmendCustomType
}
