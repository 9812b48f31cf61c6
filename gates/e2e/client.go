// Package e2e holds the functional end-to-end scenarios of gate 4 and the small frame-level
// client they are written against. The client speaks the wire protocol directly, so a scenario
// sees exactly what a device sees (frames, request ids, pushes, kicks), independent of the SDK.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// ErrClosed is returned for requests on a connection the server closed.
var ErrClosed = errors.New("e2e: connection closed")

// ServerError is an ERROR frame answering a request.
type ServerError struct {
	Code         contract.ErrorCode
	Msg          string
	RetryAfterMs uint32
	Reason       string // ErrorFrame.reason (REJECTED)
}

func (e *ServerError) Error() string { return fmt.Sprintf("e2e: server error %s: %s", e.Code, e.Msg) }

// Client is one frame-level device connection.
type Client struct {
	conn    net.Conn
	w       *wire.Writer
	nextID  atomic.Uint32
	mu      sync.Mutex
	waiting map[uint32]chan wire.Message
	pushes  chan *qimv1.PushEvents
	deltas  chan *qimv1.SessionDelta
	typing  chan *qimv1.TypingEvent
	receipt chan *qimv1.ReadReceipt
	react   chan *qimv1.ReactionEvent
	kicked  chan *qimv1.Kicked
	rooms   chan wire.Message             // ROOM_EVENTS and unsolicited ROOM_LEFT, in arrival order
	stall   atomic.Pointer[chan struct{}] // set: the read loop waits at the next room frame
	closed  chan struct{}
	stop    chan struct{} // closed by Close
	once    sync.Once
	readErr error
}

// Dial connects to a gateway's TCP listener.
func Dial(ctx context.Context, addr string) (*Client, error) { return DialFrom(ctx, addr, "") }

// DialFrom connects from the local IP from ("" any): a scenario that fails many AUTHs on purpose
// uses a loopback address of its own (127.0.0.2, …), so the gateway's per-address AUTH limit it
// provokes does not refuse the other scenarios, which connect from 127.0.0.1.
func DialFrom(ctx context.Context, addr, from string) (*Client, error) {
	var d net.Dialer
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("e2e: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, w: wire.NewWriter(conn), waiting: map[uint32]chan wire.Message{},
		pushes: make(chan *qimv1.PushEvents, 1024), deltas: make(chan *qimv1.SessionDelta, 64), typing: make(chan *qimv1.TypingEvent, 64), receipt: make(chan *qimv1.ReadReceipt, 64), react: make(chan *qimv1.ReactionEvent, 64), kicked: make(chan *qimv1.Kicked, 1), closed: make(chan struct{}),
		rooms: make(chan wire.Message, roomFrameBuffer), stop: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

func (c *Client) readLoop() {
	defer close(c.closed)
	r := wire.NewReader(c.conn)
	for {
		m, err := r.ReadMessage()
		if err != nil {
			c.readErr = err
			return
		}
		switch m.Opcode {
		case contract.OpPushEvents:
			var p qimv1.PushEvents
			if proto.Unmarshal(m.Payload, &p) == nil {
				select {
				case c.pushes <- &p:
				default: // a scenario that ignores pushes must not stall the connection
				}
			}
			continue
		case contract.OpRoomJoined:
			// Also a marker in RoomFrames: frames of the room before it are from before the join.
			if !c.deliverRoom(m) {
				return
			}
		case contract.OpRoomEvents, contract.OpRoomLeft:
			if m.Opcode == contract.OpRoomEvents || m.RequestID == 0 {
				if !c.deliverRoom(m) {
					return
				}
				continue
			}
		case contract.OpSessionDelta:
			var d qimv1.SessionDelta
			if proto.Unmarshal(m.Payload, &d) == nil {
				select {
				case c.deltas <- &d:
				default:
				}
			}
			continue
		case contract.OpTypingEvent:
			var t qimv1.TypingEvent
			if proto.Unmarshal(m.Payload, &t) == nil {
				select {
				case c.typing <- &t:
				default:
				}
			}
			continue
		case contract.OpReadReceipt:
			var rr qimv1.ReadReceipt
			if proto.Unmarshal(m.Payload, &rr) == nil {
				select {
				case c.receipt <- &rr:
				default:
				}
			}
			continue
		case contract.OpReactionEvent:
			var re qimv1.ReactionEvent
			if proto.Unmarshal(m.Payload, &re) == nil {
				select {
				case c.react <- &re:
				default:
				}
			}
			continue
		case contract.OpKicked:
			var k qimv1.Kicked
			_ = proto.Unmarshal(m.Payload, &k)
			select {
			case c.kicked <- &k:
			default:
			}
			continue
		}
		c.mu.Lock()
		ch := c.waiting[m.RequestID]
		delete(c.waiting, m.RequestID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// Call sends a request and waits for the frame answering its request id. An ERROR answer is
// returned as *ServerError; out receives any other answer's payload when its opcode matches.
func (c *Client) Call(ctx context.Context, op contract.Opcode, req proto.Message, wantOp contract.Opcode, out proto.Message) error {
	m, err := c.CallRaw(ctx, op, req)
	if err != nil {
		return err
	}
	return decodeAnswer(m, wantOp, out)
}

// CallRaw sends a request and returns the frame answering its request id as it arrived, for
// scenarios that inspect the answer's bytes (an ERROR must carry no content, for instance).
func (c *Client) CallRaw(ctx context.Context, op contract.Opcode, req proto.Message) (wire.Message, error) {
	payload, err := proto.Marshal(req)
	if err != nil {
		return wire.Message{}, err
	}
	id := c.nextID.Add(1)
	ch := make(chan wire.Message, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() { c.mu.Lock(); delete(c.waiting, id); c.mu.Unlock() }()
	if err := c.w.Send(ctx, wire.Message{Opcode: op, RequestID: id, Payload: payload}); err != nil {
		return wire.Message{}, fmt.Errorf("e2e: send %s: %w", op, err)
	}
	select {
	case m := <-ch:
		return m, nil
	case <-c.closed:
		// A final frame (an ERROR before the close) is delivered before the read loop ends,
		// but both cases are then ready and select picks at random: the answer wins.
		select {
		case m := <-ch:
			return m, nil
		default:
		}
		return wire.Message{}, fmt.Errorf("%w (%v)", ErrClosed, c.readErr)
	case <-ctx.Done():
		return wire.Message{}, fmt.Errorf("e2e: waiting for the answer to %s: %w", op, ctx.Err())
	}
}

func decodeAnswer(m wire.Message, wantOp contract.Opcode, out proto.Message) error {
	if m.Opcode == contract.OpError {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(m.Payload, &e)
		return &ServerError{Code: contract.ErrorCode(e.GetCode()), Msg: e.GetMessage(), RetryAfterMs: e.GetRetryAfterMs(), Reason: e.GetReason()}
	}
	if m.Opcode != wantOp {
		return fmt.Errorf("e2e: answer opcode %s, want %s", m.Opcode, wantOp)
	}
	if out == nil {
		return nil
	}
	return proto.Unmarshal(m.Payload, out)
}

// Auth performs AUTH with a token and the device's mailbox cursor.
func (c *Client) Auth(ctx context.Context, token, device string, cursor uint64) (*qimv1.AuthOk, error) {
	var ok qimv1.AuthOk
	req := &qimv1.AuthRequest{Token: token, DeviceId: device, LastMailboxCursor: &qimv1.MailboxCursor{MailboxSeq: cursor}}
	if err := c.Call(ctx, contract.OpAuth, req, contract.OpAuthOK, &ok); err != nil {
		return nil, err
	}
	return &ok, nil
}

// Send sends one direct message and waits for its SEND_ACK.
func (c *Client) Send(ctx context.Context, peer contract.UserID, cmid []byte, body []byte) (*qimv1.SendAck, error) {
	var ack qimv1.SendAck
	req := &qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(peer)},
		MessageType: uint32(contract.MessageText), Body: body}
	if err := c.Call(ctx, contract.OpSend, req, contract.OpSendAck, &ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// Pull performs one PULL_MAILBOX from cursor.
func (c *Client) Pull(ctx context.Context, cursor uint64) (*qimv1.MailboxBatch, error) {
	var b qimv1.MailboxBatch
	req := &qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: cursor}}
	if err := c.Call(ctx, contract.OpPullMailbox, req, contract.OpMailboxBatch, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// Ping sends PING and waits for PONG.
func (c *Client) Ping(ctx context.Context) (*qimv1.Pong, error) {
	var p qimv1.Pong
	if err := c.Call(ctx, contract.OpPing, &qimv1.Ping{ClientTimeMs: time.Now().UnixMilli()}, contract.OpPong, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// WriteRaw writes bytes as they are (for malformed-frame scenarios).
func (c *Client) WriteRaw(b []byte) error {
	_, err := c.conn.Write(b)
	return err
}

// Pushes delivers PUSH_EVENTS frames as they arrive.
func (c *Client) Pushes() <-chan *qimv1.PushEvents { return c.pushes }

// TypingEvents delivers TYPING_EVENT frames (a bounded buffer; extra ones are dropped).
func (c *Client) TypingEvents() <-chan *qimv1.TypingEvent { return c.typing }

// ReadReceipts delivers READ_RECEIPT frames (the peer of a direct conversation read).
func (c *Client) ReadReceipts() <-chan *qimv1.ReadReceipt { return c.receipt }

// TypingGroup sends TYPING for a group, which has no answer.
func (c *Client) TypingGroup(ctx context.Context, group []byte, on bool) error {
	payload, err := proto.Marshal(&qimv1.Typing{GroupId: group, Typing: on})
	if err != nil {
		return err
	}
	return c.w.Send(ctx, wire.Message{Opcode: contract.OpTyping, RequestID: c.nextID.Add(1), Payload: payload})
}

// ReactionEvents delivers REACTION_EVENT frames (a bounded buffer; extra ones are dropped).
func (c *Client) ReactionEvents() <-chan *qimv1.ReactionEvent { return c.react }

// React performs one REACT.
func (c *Client) React(ctx context.Context, req *qimv1.React) (*qimv1.ReactAck, error) {
	var out qimv1.ReactAck
	if err := c.Call(ctx, contract.OpReact, req, contract.OpReactAck, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Typing sends TYPING, which has no answer.
func (c *Client) Typing(ctx context.Context, peer contract.UserID, on bool) error {
	payload, err := proto.Marshal(&qimv1.Typing{PeerUserId: uint64(peer), Typing: on})
	if err != nil {
		return err
	}
	return c.w.Send(ctx, wire.Message{Opcode: contract.OpTyping, RequestID: c.nextID.Add(1), Payload: payload})
}

// SessionDeltas delivers SESSION_DELTA frames (a bounded buffer; extra ones are dropped).
func (c *Client) SessionDeltas() <-chan *qimv1.SessionDelta { return c.deltas }

// Kicked delivers a KICKED frame.
func (c *Client) Kicked() <-chan *qimv1.Kicked { return c.kicked }

// RoomFrames delivers ROOM_EVENTS and unsolicited ROOM_LEFT frames. The client stops reading
// its socket while roomFrameBuffer of them wait unread.
func (c *Client) RoomFrames() <-chan wire.Message { return c.rooms }

// Closed is closed when the server closed the connection (or it failed).
func (c *Client) Closed() <-chan struct{} { return c.closed }

// Close closes the connection.
func (c *Client) Close() error {
	c.once.Do(func() { close(c.stop) })
	_ = c.w.Close()
	return c.conn.Close()
}

func marshal(m proto.Message) ([]byte, error) { return proto.Marshal(m) }
