package main

import (
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Recall, edit, delete (qim_recall, qim_edit, qim_delete), reactions (qim_react) and group read
// receipts (qim_read_receipts), the receipts switch (qim_set_read_receipts) and typing
// (qim_set_typing). A message is named by its conversation and seq and read from the
// local store: an amendment names its target's sender and peer, which only the stored copy has.
// Amendments are durable sends like qim_send (the outcome arrives as "committed" or "failed");
// reactions and receipts ask the server and wait up to timeout (default 10 s).

// localMessage reads the stored message at seq of conv.
func localMessage(cl *client, conv contract.ConversationID, seq uint64) (sdk.Message, error) {
	ms, _, err := cl.c.LocalMessages(cl.ctx, conv, contract.ConversationSeq(seq+1), sdk.Older, 1)
	if err != nil {
		return sdk.Message{}, classify(err)
	}
	if len(ms) == 0 || uint64(ms[0].Seq) != seq {
		return sdk.Message{}, errorf(codeInvalid, "no stored message at seq %d of %s (read it with qim_history first)", seq, conv)
	}
	return ms[0], nil
}

// amend records a recall, edit or delete of the stored message at seq and returns
// {"client_message_id"} of the pending amendment.
func amend(h uint64, conv string, seq uint64, act contract.AmendAction, body []byte) (string, error) {
	cl, id, err := convTarget(h, conv)
	if err != nil {
		return "", err
	}
	m, err := localMessage(cl, id, seq)
	if err != nil {
		return "", err
	}
	var cmid contract.ClientMessageID
	switch act {
	case contract.AmendRecall:
		cmid, err = cl.c.Recall(cl.ctx, m)
	case contract.AmendEdit:
		cmid, err = cl.c.Edit(cl.ctx, m, body)
	default:
		cmid, err = cl.c.Delete(cl.ctx, m)
	}
	if err != nil {
		return "", classify(err)
	}
	return contract.U128(cmid).String(), nil
}

// react adds or removes the user's reaction key on the stored message at seq:
// {"changed", "reactions": [{"key", "count", "mine"}]}.
func react(h uint64, conv string, seq uint64, key string, remove bool, timeout time.Duration) (string, error) {
	cl, id, err := convTarget(h, conv)
	if err != nil {
		return "", err
	}
	m, err := localMessage(cl, id, seq)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	rs, changed, err := cl.c.React(ctx, m, key, remove)
	if err != nil {
		return "", classify(err)
	}
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = map[string]any{"key": r.Key, "count": r.Count, "mine": r.Mine}
	}
	return marshal(map[string]any{"changed": changed, "reactions": out})
}

// readReceipts asks who of a group read how far: {"group", "seq", "read_count", "audience",
// "reads": [{"user", "read_seq"}]}.
func readReceipts(h uint64, group string, seq uint64, timeout time.Duration) (string, error) {
	cl, id, err := groupTarget(h, group)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	r, err := cl.c.ReadReceipts(ctx, id, contract.ConversationSeq(seq))
	if err != nil {
		return "", classify(err)
	}
	reads := make([]map[string]any, len(r.Reads))
	for i, m := range r.Reads {
		reads[i] = map[string]any{"user": dec(uint64(m.User)), "read_seq": dec(uint64(m.Read))}
	}
	return marshal(map[string]any{"group": r.Group.String(), "seq": dec(uint64(r.Seq)), "read_count": r.ReadCount,
		"audience": r.Audience, "reads": reads})
}

// setReadReceipts withholds (share false) or shares the user's read receipts: {"share"}.
func setReadReceipts(h uint64, share bool, timeout time.Duration) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	if err := cl.c.SetReadReceipts(ctx, share); err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"share": share})
}

// setTyping tells a peer (a decimal user id) or a group (its 32-digit id) that the user is typing
// or stopped. Best effort: offline, or with a full queue, it is dropped (codeUnavailable).
func setTyping(h uint64, target string, typing bool) error {
	cl, err := lookup(h)
	if err != nil {
		return err
	}
	var queued bool
	if peer, perr := strconv.ParseUint(target, 10, 64); perr == nil && peer != 0 {
		queued = cl.c.SetTyping(contract.UserID(peer), typing)
	} else {
		group, gerr := parseConversation(target)
		if gerr != nil || group.Kind() != contract.KindGroup {
			return errorf(codeInvalid, "%q is neither a decimal user id nor a group's 32-digit id", target)
		}
		queued = cl.c.SetGroupTyping(group, typing)
	}
	if !queued {
		return errorf(codeUnavailable, "typing indicator dropped (offline or queue full)")
	}
	return nil
}
