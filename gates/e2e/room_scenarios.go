package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// RoomScenarios are the chatroom scenarios (ADR-0034): room_seq, live broadcast, the replay
// window and its honest truncation, leaving, and rooms leaving no trace in mailboxes or lists.
func RoomScenarios() []Scenario {
	return []Scenario{
		{"room-join-live-replay-and-truncation", scenarioRoomJoinReplay},
		{"room-broadcast-reaches-every-gateway-once", scenarioRoomEveryGateway},
		{"room-leave-stops-delivery", scenarioRoomLeave},
		{"room-slow-consumer-dropped-and-rejoins", scenarioRoomSlowConsumer},
		{"room-leaves-no-mailbox-or-session-trace", scenarioRoomNoTrace},
		{"room-moderation-through-the-admin-api", scenarioRoomModeration},
		{"room-writer-killed-members-rejoin-in-a-new-epoch", scenarioRoomWriterKilled},
		{"room-moderation-survives-a-roomwriter-restart", scenarioRoomModerationSurvivesRestart},
	}
}

// loginN logs n fresh users in (spread over the gateways by user id).
func loginN(ctx context.Context, e *Env, n int) ([]*Client, error) {
	cs, _, err := loginUsers(ctx, e, n)
	return cs, err
}

func loginUsers(ctx context.Context, e *Env, n int) ([]*Client, []contract.UserID, error) {
	var out []*Client
	var users []contract.UserID
	for i := 0; i < n; i++ {
		u := e.User()
		c, _, err := e.Login(ctx, u, fmt.Sprintf("r%d", i), 0)
		if err != nil {
			closeAll(out)
			return nil, nil, err
		}
		out, users = append(out, c), append(users, u)
	}
	return out, users, nil
}

func closeAll(cs []*Client) {
	for _, c := range cs {
		c.Close()
	}
}

func ptr(v uint64) *uint64 { return &v }

// scenarioRoomJoinReplay: a live member sees every event once, in room_seq order, whatever the
// publisher retries; later joins replay from where they ask, and only a start the buffer cannot
// prove complete is reported truncated.
func scenarioRoomJoinReplay(ctx context.Context, e *Env) error {
	cs, err := loginN(ctx, e, 5)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	live, pub, room := cs[0], cs[1], NewRoomID()
	joined, err := live.JoinRoom(ctx, room, nil)
	if err != nil {
		return fmt.Errorf("live join: %w", err)
	}
	if joined.GetReplayTruncated() || !bytes.Equal(joined.GetRoomId(), room) {
		return fmt.Errorf("live join answered %v", joined)
	}
	acks, err := publishRoom(ctx, pub, room, 3)
	if err != nil {
		return err
	}
	first := acks[0].GetConversationSeq()
	if err := checkRoomAcks(acks, room, joined.GetRoomSeq()); err != nil {
		return err
	}
	retry, err := pub.SendRoom(ctx, room, acks[1].GetClientMessageId(), []byte("room event 1"))
	if err != nil || retry.GetConversationSeq() != acks[1].GetConversationSeq() {
		return fmt.Errorf("retry of event 1: ack %v, %v; want room_seq %d", retry, err, acks[1].GetConversationSeq())
	}
	if _, err := pub.SendRoom(ctx, room, acks[1].GetClientMessageId(), []byte("other content")); !isCode(err, contract.ErrCodeConflict) {
		return fmt.Errorf("same client_message_id, other body: %v, want CONFLICT", err)
	}
	marker, err := publishRoom(ctx, pub, room, 1)
	if err != nil {
		return err
	}
	last := marker[0].GetConversationSeq()
	got, err := live.RoomEventsThrough(ctx, room, last)
	if err != nil {
		return fmt.Errorf("live member: %w", err)
	}
	if want := seqRun(first, last); !slices.Equal(roomSeqs(got), want) {
		return fmt.Errorf("live member got room_seq %v, want %v (once each, in order)", roomSeqs(got), want)
	}
	return checkReplays(ctx, cs[2:], room, first, last)
}

// checkReplays joins three members: from the second event (complete), from before the room's
// first event in this RoomWriter (truncated: an earlier owner's events are unknown), and past
// the end (nothing to replay).
func checkReplays(ctx context.Context, cs []*Client, room []byte, first, last uint64) error {
	for i, tc := range []struct {
		from      uint64
		truncated bool
		want      []uint64
	}{
		{first + 1, false, seqRun(first+1, last)},
		{first - 1, true, seqRun(first, last)},
		{last + 1, false, nil},
	} {
		j, err := cs[i].JoinRoom(ctx, room, ptr(tc.from))
		if err != nil {
			return fmt.Errorf("join from %d: %w", tc.from, err)
		}
		if j.GetRoomSeq() != last || j.GetReplayTruncated() != tc.truncated {
			return fmt.Errorf("join from %d: ROOM_JOINED room_seq %d truncated %v, want %d %v", tc.from,
				j.GetRoomSeq(), j.GetReplayTruncated(), last, tc.truncated)
		}
		if tc.want == nil {
			continue
		}
		got, err := cs[i].RoomEventsThrough(ctx, room, last)
		if err != nil {
			return fmt.Errorf("replay from %d: %w", tc.from, err)
		}
		if !slices.Equal(roomSeqs(got), tc.want) {
			return fmt.Errorf("replay from %d: room_seq %v, want %v", tc.from, roomSeqs(got), tc.want)
		}
	}
	return nil
}

// publishRoom sends n text events "room event i" and returns their acks.
func publishRoom(ctx context.Context, c *Client, room []byte, n int) ([]*qimv1.SendAck, error) {
	var acks []*qimv1.SendAck
	for i := 0; i < n; i++ {
		ack, err := c.SendRoom(ctx, room, NewCmid(), []byte(fmt.Sprintf("room event %d", i)))
		if err != nil {
			return acks, fmt.Errorf("room send %d: %w", i, err)
		}
		acks = append(acks, ack)
	}
	return acks, nil
}

// checkRoomAcks: consecutive room_seq above the join's, the room's conversation id, and no
// message id (room events are named by room and room_seq).
func checkRoomAcks(acks []*qimv1.SendAck, room []byte, joinedAt uint64) error {
	rid, err := contract.U128FromBytes(room)
	if err != nil {
		return err
	}
	conv, err := contract.RoomConversationID(rid)
	if err != nil {
		return err
	}
	cb := conv.Bytes()
	for i, a := range acks {
		if a.GetConversationSeq() != joinedAt+1+uint64(i) {
			return fmt.Errorf("ack %d: room_seq %d, want %d", i, a.GetConversationSeq(), joinedAt+1+uint64(i))
		}
		if !bytes.Equal(a.GetConversationId(), cb[:]) || !bytes.Equal(a.GetMessageId(), make([]byte, 16)) {
			return fmt.Errorf("ack %d: conversation_id %x message_id %x, want %x and 16 zero bytes", i,
				a.GetConversationId(), a.GetMessageId(), cb)
		}
	}
	return nil
}

// scenarioRoomEveryGateway: members logged in on every gateway each get every event once.
func scenarioRoomEveryGateway(ctx context.Context, e *Env) error {
	cs, err := loginN(ctx, e, 2*len(e.Gateways)+1)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	room := NewRoomID()
	for i, c := range cs[1:] {
		if _, err := c.JoinRoom(ctx, room, nil); err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	acks, err := publishRoom(ctx, cs[0], room, 5)
	if err != nil {
		return err
	}
	want := seqRun(acks[0].GetConversationSeq(), acks[4].GetConversationSeq())
	for i, c := range cs[1:] {
		got, err := c.RoomEventsThrough(ctx, room, want[4])
		if err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
		if !slices.Equal(roomSeqs(got), want) {
			return fmt.Errorf("member %d got room_seq %v, want %v", i, roomSeqs(got), want)
		}
	}
	return nil
}

// scenarioRoomLeave: after LEAVE_ROOM (answered ROOM_LEFT REQUESTED) nothing of the room
// arrives, while the remaining member still gets everything.
func scenarioRoomLeave(ctx context.Context, e *Env) error {
	cs, err := loginN(ctx, e, 2)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	a, b, room := cs[0], cs[1], NewRoomID()
	for _, c := range cs {
		if _, err := c.JoinRoom(ctx, room, nil); err != nil {
			return err
		}
	}
	left, err := a.LeaveRoom(ctx, room)
	if err != nil {
		return err
	}
	if contract.RoomLeftReason(left.GetReason()) != contract.RoomLeftRequested {
		return fmt.Errorf("LEAVE_ROOM answered reason %d, want REQUESTED", left.GetReason())
	}
	acks, err := publishRoom(ctx, b, room, 2)
	if err != nil {
		return err
	}
	if _, err := b.RoomEventsThrough(ctx, room, acks[1].GetConversationSeq()); err != nil {
		return fmt.Errorf("remaining member: %w", err)
	}
	// Rejoin live: anything of the room queued to the left member before it would be read
	// before the marker published after the rejoin.
	if _, err := a.JoinRoom(ctx, room, nil); err != nil {
		return err
	}
	marker, err := publishRoom(ctx, b, room, 1)
	if err != nil {
		return err
	}
	got, err := a.RoomEventsThrough(ctx, room, marker[0].GetConversationSeq())
	if err != nil {
		return err
	}
	if want := []uint64{marker[0].GetConversationSeq()}; !slices.Equal(roomSeqs(got), want) {
		return fmt.Errorf("after leaving and rejoining live: room_seq %v, want only %v", roomSeqs(got), want)
	}
	return nil
}

// errNoSlowDrop: the gateway kept a consumer that stopped reading.
var errNoSlowDrop = errors.New("a member that stopped reading was never dropped (no ROOM_LEFT SLOW_CONSUMER)")

// slowEvents × slowBody (19 MiB) is more than what a member that stops reading its socket
// (Stall) can hold back: the kernel's socket buffers (a few MiB on loopback) and the gateway's
// room queue (1 MiB by default); so it must be dropped.
const (
	slowEvents  = 600
	slowBody    = 32 << 10
	slowSenders = 4
)

// scenarioRoomSlowConsumer: a member that stops reading is dropped with ROOM_LEFT
// SLOW_CONSUMER while a reading member gets every event; the dropped one rejoins with replay
// from the last event it saw, and the replay is either complete or honestly truncated.
func scenarioRoomSlowConsumer(ctx context.Context, e *Env) error {
	cs, err := loginN(ctx, e, 3)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	slow, fast, pub, room := cs[0], cs[1], cs[2], NewRoomID()
	for _, c := range cs[:2] {
		if _, err := c.JoinRoom(ctx, room, nil); err != nil {
			return err
		}
	}
	fastGot := make(chan uint64, 2*slowEvents)
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // the reading member reads while the load runs
		for {
			evs, err := fast.NextRoomEvents(dctx, room)
			if err != nil {
				close(fastGot)
				return
			}
			for _, s := range roomSeqs(evs) {
				fastGot <- s
			}
		}
	}()
	slow.Stall()
	first, last, err := publishParallel(ctx, pub, room)
	slow.Resume()
	if err != nil {
		return err
	}
	seen, err := readUntilDropped(ctx, slow, room, last)
	if err != nil {
		return err
	}
	if err := rejoinAfterDrop(ctx, slow, room, seen, last); err != nil {
		return err
	}
	var got []uint64
	for s := range fastGot {
		if got = append(got, s); s >= last {
			break
		}
	}
	if !slices.Equal(got, seqRun(first, last)) {
		return fmt.Errorf("the reading member got %d events ending %v, want all %d in order", len(got), got[max(0, len(got)-2):], slowEvents)
	}
	return nil
}

// publishParallel publishes slowEvents events of slowBody bytes from slowSenders goroutines on
// one connection and returns the lowest and highest room_seq acknowledged.
func publishParallel(ctx context.Context, pub *Client, room []byte) (uint64, uint64, error) {
	body := bytes.Repeat([]byte("r"), slowBody)
	type res struct {
		seq uint64
		err error
	}
	out := make(chan res, slowEvents)
	for g := 0; g < slowSenders; g++ {
		go func() {
			for i := 0; i < slowEvents/slowSenders; i++ {
				ack, err := pub.SendRoom(ctx, room, NewCmid(), body)
				out <- res{ack.GetConversationSeq(), err}
			}
		}()
	}
	lo, hi := ^uint64(0), uint64(0)
	for i := 0; i < slowEvents; i++ {
		r := <-out
		if r.err != nil {
			return 0, 0, fmt.Errorf("room send: %w", r.err)
		}
		lo, hi = min(lo, r.seq), max(hi, r.seq)
	}
	if hi-lo+1 != slowEvents {
		return 0, 0, fmt.Errorf("%d sends acknowledged room_seq %d..%d: not one per send", slowEvents, lo, hi)
	}
	return lo, hi, nil
}

// readUntilDropped reads the stalled member's backlog until its ROOM_LEFT SLOW_CONSUMER and
// returns the last room_seq it saw (0: none).
func readUntilDropped(ctx context.Context, c *Client, room []byte, last uint64) (uint64, error) {
	seen, err := c.ReadUntilLeft(ctx, room, contract.RoomLeftSlowConsumer, last)
	switch {
	case errors.Is(err, errNotLeft):
		return 0, errNoSlowDrop
	case err != nil:
		return 0, fmt.Errorf("stalled member: %w", err)
	}
	return seen, nil
}

// rejoinAfterDrop rejoins from the event after the last one seen: the replay starts exactly
// there unless the answer says truncated, and then starts later.
func rejoinAfterDrop(ctx context.Context, c *Client, room []byte, seen, last uint64) error {
	from := seen + 1
	j, err := c.JoinRoom(ctx, room, ptr(from))
	if err != nil {
		return fmt.Errorf("rejoin: %w", err)
	}
	if j.GetRoomSeq() < last {
		return fmt.Errorf("rejoin: ROOM_JOINED room_seq %d below the last acknowledged %d", j.GetRoomSeq(), last)
	}
	if err := c.SkipToJoined(ctx, room); err != nil {
		return fmt.Errorf("rejoin: %w", err)
	}
	got, err := c.RoomEventsThrough(ctx, room, last)
	if err != nil {
		return fmt.Errorf("rejoin replay: %w", err)
	}
	seqs := roomSeqs(got)
	if !slices.Equal(seqs, seqRun(seqs[0], last)) {
		return fmt.Errorf("rejoin replay is not one run ending at %d: %d events from %d", last, len(seqs), seqs[0])
	}
	if truncated := seqs[0] > from; truncated != j.GetReplayTruncated() {
		return fmt.Errorf("rejoin from %d: replay starts at %d but replay_truncated is %v", from, seqs[0], j.GetReplayTruncated())
	}
	return nil
}

// scenarioRoomNoTrace: a user who only joins, reads and publishes in a room has nothing in
// the mailbox and no session row; a direct message sent afterwards is the only thing there.
func scenarioRoomNoTrace(ctx context.Context, e *Env) error {
	cs, users, err := loginUsers(ctx, e, 2)
	if err != nil {
		return err
	}
	defer closeAll(cs)
	u, peer, room := cs[0], cs[1], NewRoomID()
	if _, err := u.JoinRoom(ctx, room, nil); err != nil {
		return err
	}
	acks, err := publishRoom(ctx, peer, room, 2)
	if err != nil {
		return err
	}
	own, err := publishRoom(ctx, u, room, 1)
	if err != nil {
		return err
	}
	if _, err := u.RoomEventsThrough(ctx, room, max(acks[1].GetConversationSeq(), own[0].GetConversationSeq())); err != nil {
		return err
	}
	marker, err := peer.Send(ctx, users[0], NewCmid(), []byte("the only thing in the mailbox"))
	if err != nil {
		return err
	}
	evs, _, err := PullUntil(ctx, u, 0, HasMessage(marker.GetMessageId()))
	if err != nil {
		return err
	}
	if len(evs) != 1 {
		return fmt.Errorf("mailbox holds %d events, want only the direct message: rooms must not write mailboxes", len(evs))
	}
	return onlySessionRow(ctx, u, marker.GetConversationId())
}

// onlySessionRow waits for conv's row and then requires it to be the only one.
func onlySessionRow(ctx context.Context, c *Client, conv []byte) error {
	ctx, cancel := context.WithTimeout(ctx, projectionWait)
	defer cancel()
	for {
		b, err := c.PullSessionList(ctx, nil, 0)
		if err != nil {
			return err
		}
		for _, s := range b.GetSessions() {
			if bytes.Equal(s.GetConversationId(), conv) {
				if n := len(b.GetSessions()); n != 1 {
					return fmt.Errorf("session list has %d rows, want only the direct conversation: rooms must not write session rows", n)
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the direct conversation's row never appeared: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
