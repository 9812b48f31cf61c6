package gateway

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// fakeRoom stands in for a RoomWriter (a service, never a store): it answers every join with an
// empty room at room_seq 0 and broadcasts each publish, numbered from 1, to every link that
// joined the room.
type fakeRoom struct {
	internalv1.UnimplementedRoomWriterServer
	mu    sync.Mutex
	seq   uint64
	links map[string][]chan *internalv1.RoomLinkDown // room id → joined links' outboxes
}

func newFakeRoom() *fakeRoom { return &fakeRoom{links: map[string][]chan *internalv1.RoomLinkDown{}} }

func (f *fakeRoom) Link(stream internalv1.RoomWriter_LinkServer) error {
	out := make(chan *internalv1.RoomLinkDown, 64)
	go func() {
		for d := range out {
			if stream.Send(d) != nil {
				return
			}
		}
	}()
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for room, outs := range f.links {
			f.links[room] = slices.DeleteFunc(outs, func(o chan *internalv1.RoomLinkDown) bool { return o == out })
		}
		close(out)
	}()
	for {
		up, err := stream.Recv()
		if err != nil {
			return nil
		}
		j := up.GetJoin()
		if j == nil {
			continue
		}
		f.mu.Lock()
		f.links[string(j.GetRoomId())] = append(f.links[string(j.GetRoomId())], out)
		out <- &internalv1.RoomLinkDown{Items: []*internalv1.RoomLinkItem{{Item: &internalv1.RoomLinkItem_Joined{
			Joined: &internalv1.RoomJoinAnswer{CallId: j.GetCallId(), Joined: &qimv1.RoomJoined{RoomId: j.GetRoomId()}}}}}}
		f.mu.Unlock()
	}
}

func (f *fakeRoom) Publish(_ context.Context, p *internalv1.RoomPublish) (*internalv1.RoomPublishOutcome, error) {
	var req qimv1.SendRequest
	if err := proto.Unmarshal(p.GetSendRequest(), &req); err != nil {
		return &internalv1.RoomPublishOutcome{ErrorCode: uint32(contract.ErrCodeInvalidArgument), ErrorMessage: "does not decode"}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	ev := &qimv1.RoomEvent{RoomSeq: f.seq, SenderUserId: p.GetSenderUserId(), MessageType: req.GetMessageType(), Body: req.GetBody()}
	for _, out := range f.links[string(req.GetRoomId())] {
		out <- &internalv1.RoomLinkDown{Items: []*internalv1.RoomLinkItem{{Item: &internalv1.RoomLinkItem_Events{
			Events: &internalv1.RoomBroadcast{TenantId: p.GetTenantId(), RoomId: req.GetRoomId(), Events: []*qimv1.RoomEvent{ev}}}}}}
	}
	return &internalv1.RoomPublishOutcome{Ack: &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: make([]byte, 16),
		ConversationSeq: f.seq}}, nil
}
