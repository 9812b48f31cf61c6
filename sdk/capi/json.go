package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// The JSON shapes of qim.h. Every u64 (user ids, seqs, versions, room_seq) is a decimal string
// and every u128 32 hex digits: a double holds integers exactly only below 2^53 (the protocol's
// rule for clients in languages whose numbers are doubles). Times in milliseconds and counts
// stay numbers; they are far below 2^53.

func dec(v uint64) string { return strconv.FormatUint(v, 10) }

type jsonMessage struct {
	ID              string `json:"id"`
	Conversation    string `json:"conversation"`
	Seq             string `json:"seq"`
	Sender          string `json:"sender"`
	Type            uint32 `json:"type"`
	CustomType      string `json:"custom_type,omitempty"`
	HasBody         bool   `json:"has_body"`
	Body            []byte `json:"body_b64"`
	ClientMessageID string `json:"client_message_id,omitempty"`
	SentAtMs        int64  `json:"sent_at_ms"`
	Flags           uint32 `json:"flags"`
}

func messageJSON(m sdk.Message) jsonMessage {
	out := jsonMessage{ID: contract.U128(m.ID).String(), Conversation: m.Conversation.String(), Seq: dec(uint64(m.Seq)),
		Sender: dec(uint64(m.Sender)), Type: uint32(m.Type), CustomType: m.CustomType, HasBody: m.HasBody, Body: m.Body,
		SentAtMs: m.SentAtMs, Flags: m.Flags}
	if !contract.U128(m.ClientMessageID).IsZero() {
		out.ClientMessageID = contract.U128(m.ClientMessageID).String()
	}
	if out.Body == nil {
		out.Body = []byte{}
	}
	return out
}

func messagesJSON(ms []sdk.Message) []jsonMessage {
	out := make([]jsonMessage, len(ms))
	for i, m := range ms {
		out[i] = messageJSON(m)
	}
	return out
}

type jsonConversation struct {
	ID              string `json:"id"`
	Kind            string `json:"kind"`
	Peer            string `json:"peer"`
	LatestSeq       string `json:"latest_seq"`
	LatestMessageID string `json:"latest_message_id"`
	LastActivityMs  int64  `json:"last_activity_ms"`
	ReadSeq         string `json:"read_seq"`
	Unread          uint32 `json:"unread"`
	UnreadExact     bool   `json:"unread_exact"`
	Incomplete      bool   `json:"incomplete"`
}

func conversationJSON(c sdk.Conversation) jsonConversation {
	return jsonConversation{ID: c.ID.String(), Kind: c.Kind.String(), Peer: dec(uint64(c.Peer)), LatestSeq: dec(uint64(c.LatestSeq)),
		LatestMessageID: contract.U128(c.LatestMessageID).String(), LastActivityMs: c.LastActivityMs,
		ReadSeq: dec(uint64(c.ReadSeq)), Unread: c.Unread, UnreadExact: c.UnreadExact, Incomplete: c.Incomplete}
}

func conversationsJSON(cs []sdk.Conversation) []jsonConversation {
	out := make([]jsonConversation, len(cs))
	for i, c := range cs {
		out[i] = conversationJSON(c)
	}
	return out
}

// errText is an error's message for JSON, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// eventJSON renders one SDK event as the object qim_next_event returns.
func eventJSON(ev sdk.Event) (string, error) {
	var v any
	switch e := ev.(type) {
	case sdk.Online:
		v = map[string]any{"type": "online", "session_epoch": dec(e.SessionEpoch), "heartbeat_ms": e.HeartbeatInterval.Milliseconds()}
	case sdk.Offline:
		v = map[string]any{"type": "offline", "retry": e.Retry, "retry_in_ms": e.RetryIn.Milliseconds(), "error": errText(e.Err)}
	case sdk.MessagesAdded:
		v = map[string]any{"type": "messages_added", "source": e.Source.String(), "messages": messagesJSON(e.Messages)}
	case sdk.MessagesAmended:
		v = map[string]any{"type": "messages_amended", "messages": messagesJSON(e.Messages)}
	case sdk.ConversationsUpdated:
		v = map[string]any{"type": "conversations_updated", "conversations": conversationsJSON(e.Conversations)}
	case sdk.Committed:
		v = map[string]any{"type": "committed", "client_message_id": contract.U128(e.ClientMessageID).String(), "message": messageJSON(e.Message)}
	case sdk.Failed:
		v = map[string]any{"type": "failed", "client_message_id": contract.U128(e.ClientMessageID).String(), "code": e.Code.String(), "error": errText(e.Err)}
	case sdk.Kicked:
		v = map[string]any{"type": "kicked", "reason": e.Reason.String(), "detail": e.Detail, "reconnect": e.Reconnect}
	case sdk.SyncProgress:
		v = map[string]any{"type": "sync_progress", "phase": e.Phase.String(), "applied": e.Applied, "cursor": dec(uint64(e.Cursor))}
	default:
		v = otherEventJSON(ev)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("capi: encoding %T: %w", ev, err)
	}
	return string(b), nil
}

// otherEventJSON renders the events of groups, rooms, typing and store resets.
func otherEventJSON(ev sdk.Event) any {
	switch e := ev.(type) {
	case sdk.LocalStoreReset:
		return map[string]any{"type": "local_store_reset", "reason": string(e.Reason), "generation": dec(e.Generation)}
	case sdk.GroupCreated:
		return map[string]any{"type": "group_created", "client_request_id": e.ClientRequestID.String(), "group": e.Group.String(),
			"membership_version": dec(e.MembershipVersion)}
	case sdk.GroupCreateFailed:
		return map[string]any{"type": "group_create_failed", "client_request_id": e.ClientRequestID.String(), "group": e.Group.String(),
			"code": e.Code.String(), "error": errText(e.Err)}
	case sdk.MembershipChanged:
		return map[string]any{"type": "membership_changed", "group": e.Group.String(), "seq": dec(uint64(e.Seq)),
			"message_id": contract.U128(e.MessageID).String(), "error": errText(e.Err)}
	case sdk.RoomJoined:
		return map[string]any{"type": "room_joined", "room": e.Room.String(), "room_seq": dec(e.RoomSeq),
			"replay_truncated": e.ReplayTruncated, "rejoin": e.Rejoin}
	case sdk.RoomEvents:
		return roomEventsJSON(e)
	case sdk.RoomLeft:
		return map[string]any{"type": "room_left", "room": e.Room.String(), "reason": e.Reason.String(), "rejoining": e.Rejoining,
			"error": errText(e.Err)}
	case sdk.Typing:
		return map[string]any{"type": "typing", "conversation": contract.U128(e.Conversation).String(), "user": dec(uint64(e.User)),
			"typing": e.Typing, "until_ms": e.Until.UnixMilli()}
	case sdk.ReadReceipt:
		return map[string]any{"type": "read_receipt", "conversation": contract.U128(e.Conversation).String(),
			"reader": dec(uint64(e.Reader)), "seq": dec(uint64(e.Seq))}
	case sdk.ReactionChanged:
		rs := make([]map[string]any, len(e.Reactions))
		for i, r := range e.Reactions {
			rs[i] = map[string]any{"key": r.Key, "count": r.Count}
		}
		return map[string]any{"type": "reaction_changed", "conversation": contract.U128(e.Conversation).String(),
			"seq": dec(uint64(e.Seq)), "user": dec(uint64(e.User)), "key": e.Key, "removed": e.Removed, "reactions": rs}
	}
	return map[string]any{"type": "unknown", "go_type": fmt.Sprintf("%T", ev)}
}

func roomEventsJSON(e sdk.RoomEvents) any {
	evs := make([]map[string]any, len(e.Events))
	for i, r := range e.Events {
		body := r.Body
		if body == nil {
			body = []byte{}
		}
		evs[i] = map[string]any{"room_seq": dec(r.RoomSeq), "sender": dec(uint64(r.Sender)), "type": uint32(r.Type),
			"custom_type": r.CustomType, "body_b64": body, "sent_at_ms": r.SentAtMs}
	}
	out := map[string]any{"type": "room_events", "room": e.Room.String(), "events": evs}
	if e.Gap != nil {
		out["gap"] = map[string]any{"after": dec(e.Gap.After), "next": dec(e.Gap.Next)}
	}
	return out
}

// marshal encodes a result object.
func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", errors.Join(errors.New("capi: encoding a result"), err)
	}
	return string(b), nil
}
