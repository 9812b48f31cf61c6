package webit

import (
	"math"

	"google.golang.org/protobuf/proto"

	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// ones is 16 bytes of 0xff: u128::MAX, the id a JS number can hold least.
var ones = []byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}

func id(last byte) []byte { b := make([]byte, 16); b[0], b[15] = 0x10, last; return b }

func sendRequest() *qimv1.SendRequest {
	return &qimv1.SendRequest{ClientMessageId: ones, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: 1<<53 + 1},
		MessageType: 1, CustomType: "x.y", Body: []byte("héllo"), ClientTimeMs: 1_700_000_000_123, Mentions: []uint64{math.MaxUint64, 1<<53 + 1}}
}

// sampleMessages cover every downlink message the SDK decodes and the uplinks it encodes, with
// the extreme ids and sequences (2^53+1, u64::MAX, u128::MAX) and an absent versus an empty
// optional body.
func sampleMessages() []proto.Message {
	empty := []byte{}
	return []proto.Message{
		sendRequest(),
		&qimv1.SendRequest{ClientMessageId: id(1), Target: &qimv1.SendRequest_RoomId{RoomId: ones}, Body: []byte{0, 1, 2}},
		&qimv1.SendAck{ClientMessageId: ones, MessageId: ones, ConversationId: id(2), ConversationSeq: math.MaxInt64, CommittedAtMs: 1_700_000_000_000},
		&qimv1.AuthOk{UserId: math.MaxUint64, SessionEpoch: 1<<53 + 1, HeartbeatIntervalMs: 60_000, HasOfflineData: true, ServerTimeMs: 1, HeartbeatTimeoutMs: 150_000},
		&qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: math.MaxUint64}, Limit: 100},
		&qimv1.MailboxBatch{Entries: []*qimv1.MailboxEvent{
			{MailboxSeq: 1<<53 + 1, EventType: 1, MessageId: ones, ConversationId: id(3), ConversationSeq: 7, SenderUserId: math.MaxUint64,
				MessageType: 1, Body: []byte("hi"), ClientMessageId: id(4), SentAtMs: 5},
			{MailboxSeq: 1<<53 + 2, MessageId: id(5), ConversationId: id(3), ConversationSeq: 8, Body: empty},
			{MailboxSeq: 1<<53 + 3, MessageId: id(6), ConversationId: id(3), ConversationSeq: 9},
		}, NextCursor: &qimv1.MailboxCursor{MailboxSeq: 1<<53 + 3}, HasMore: true},
		&qimv1.SessionListBatch{Sessions: []*qimv1.SessionEntry{
			{ConversationId: id(7), LatestConversationSeq: 1<<53 + 1, ReadConversationSeq: 3, UnreadCount: 200, ConversationKind: 1,
				Peer: &qimv1.SessionEntry_PeerUserId{PeerUserId: math.MaxUint64},
				Head: &qimv1.HistoryMessage{MessageId: ones, ConversationSeq: 1<<53 + 1, Body: []byte("last"), Mentions: []uint64{2}}},
			{ConversationId: id(8), UnreadCount: 1, UnreadExact: true, ConversationKind: 2, Peer: &qimv1.SessionEntry_GroupId{GroupId: id(8)}},
		}, NextPageToken: []byte{1, 2}, HasMore: true},
		&qimv1.HistoryBatch{ConversationId: id(9), Records: []*qimv1.HistoryMessage{{MessageId: id(10), ConversationSeq: 1, Body: empty, Flags: 1}},
			HasMore: true, NextAnchorSeq: math.MaxInt64},
		&qimv1.RoomEvents{RoomId: ones, Events: []*qimv1.RoomEvent{{RoomSeq: math.MaxUint64, SenderUserId: 1<<53 + 1, Body: []byte("r"), SentAtMs: 9}}},
		&qimv1.RoomJoined{RoomId: ones, RoomSeq: 1<<53 + 1, ReplayTruncated: true},
		&qimv1.MembersBatch{GroupId: id(11), Members: []*qimv1.Member{{UserId: math.MaxUint64, JoinedAtSeq: 1, LeftAtSeq: 0}}, MembershipVersion: 3},
		&qimv1.ErrorFrame{Code: 9, Message: "down", RetryAfterMs: 250, RequestOpcode: 0x0201},
		&qimv1.Kicked{Reason: 1, Detail: "replaced"},
	}
}
