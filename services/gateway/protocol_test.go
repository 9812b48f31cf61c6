package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/authn/revocation"
	"github.com/qim-dev/qim/wire"
)

// This file holds the gateway to docs/protocol.md: TestProtocolCases runs every row of
// contract.ProtocolCases, the table the doc's connection-outcome section is generated from,
// against a real gateway (protocol_frames_test.go does the same for the opcode table and the
// size limits). A documented case without a scenario here, or a scenario without a row, fails.

// caseOutcome is what the server did after a scenario: its first frame and whether it then closed.
type caseOutcome struct {
	reply  contract.Opcode
	code   contract.ErrorCode
	kick   contract.KickReason
	reqID  uint32
	closed bool
}

func (o caseOutcome) String() string {
	s := "no frame"
	switch o.reply {
	case contract.OpError:
		s = fmt.Sprintf("ERROR %v (request %d)", o.code, o.reqID)
	case contract.OpKicked:
		s = fmt.Sprintf("KICKED reason %d", o.kick)
	case 0:
	default:
		s = o.reply.String()
	}
	if o.closed {
		return s + ", then closed"
	}
	return s + ", connection open"
}

// caseRun is one scenario run: on a fresh connection, authenticated or not.
type caseRun struct {
	t         *testing.T
	std       *harness // the shared default gateway
	authed    bool
	wantReqID uint32 // request id the documented ERROR must carry
}

// open connects to h, and authenticates when the run is after AUTH.
func (r *caseRun) open(h *harness) *client {
	c := dialTCP(r.t, h.addrs.TCP)
	if r.authed {
		c.auth(newIdentity(r.t, "proto").token, 0)
	}
	return c
}

// caseWait bounds a wait for something that must happen; the passing path never waits it out.
const caseWait = 10 * time.Second

// observe reads the server's reaction: the first frame, or the close, then — after a frame —
// whether the connection closes (the next read ends it) or stays usable (a PING is answered).
func (r *caseRun) observe(c *client, closes bool) caseOutcome {
	var o caseOutcome
	m, err := c.tryRead(caseWait)
	switch {
	case errors.Is(err, errReadTimeout):
		r.t.Fatalf("neither a frame nor a close within %v", caseWait)
	case err != nil:
		return caseOutcome{closed: true}
	}
	o.reply, o.reqID = m.Opcode, m.RequestID
	switch m.Opcode {
	case contract.OpError:
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(m.Payload, &e)
		o.code = contract.ErrorCode(e.GetCode())
	case contract.OpKicked:
		var k qimv1.Kicked
		_ = proto.Unmarshal(m.Payload, &k)
		o.kick = contract.KickReason(k.GetReason())
	}
	if closes {
		if m, err := c.tryRead(caseWait); err == nil {
			r.t.Fatalf("frame %v after %v, want the close", m.Opcode, o.reply)
		} else {
			o.closed = !errors.Is(err, errReadTimeout)
		}
		return o
	}
	ping := encodeFrame(wire.Header{Opcode: contract.OpPing, StreamID: wire.ControlStream, RequestID: 0xFFFF}, nil)
	if _, err := c.nc.Write(ping); err != nil {
		o.closed = true
		return o
	}
	switch m, err = c.tryRead(caseWait); {
	case errors.Is(err, errReadTimeout):
		r.t.Fatalf("the connection neither answered a PING nor closed within %v", caseWait)
	case err != nil:
		o.closed = true
	case m.Opcode != contract.OpPong || m.RequestID != 0xFFFF:
		r.t.Fatalf("got %v request %d, want the PONG", m.Opcode, m.RequestID)
	}
	return o
}

// sendRaw writes b on a fresh connection of the shared gateway and observes; reqID is the
// request id the documented ERROR, if the row has one, must carry.
func (r *caseRun) sendRaw(closes bool, reqID uint32, b []byte) caseOutcome {
	c := r.open(r.std)
	c.writeRaw(b)
	r.wantReqID = reqID
	return r.observe(c, closes)
}

// protocolScenarios provoke each documented case. The bool says whether the row closes, which
// only decides how observe checks; the verdict compares what happened with the row.
var protocolScenarios = map[string]func(r *caseRun, closes bool) caseOutcome{
	"bad_magic": func(r *caseRun, closes bool) caseOutcome {
		b := frameOf(contract.OpPing, 0, wire.ControlStream, 1, nil)
		b[0] = 'X'
		return r.sendRaw(closes, 0, b)
	},
	"bad_version": func(r *caseRun, closes bool) caseOutcome {
		b := frameOf(contract.OpPing, 0, wire.ControlStream, 1, nil)
		b[2] = 2
		return r.sendRaw(closes, 0, resealCRC(b))
	},
	"bad_header_crc": func(r *caseRun, closes bool) caseOutcome {
		b := frameOf(contract.OpPing, 0, wire.ControlStream, 1, nil)
		b[19] ^= 0xFF
		return r.sendRaw(closes, 0, b)
	},
	"reserved_flags": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 0, frameOf(contract.OpPing, wire.FlagNeedAck, wire.ControlStream, 1, nil))
	},
	"frame_too_large": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 0, wire.AppendHeader(nil, wire.Header{Opcode: contract.OpSend, StreamID: wire.DataStream,
			RequestID: 7, Length: wire.MaxPayload + 1}))
	},
	"message_too_large": func(r *caseRun, closes bool) caseOutcome {
		b := frameOf(contract.OpSend, wire.FlagMore, wire.DataStream, 7, make([]byte, wire.MaxPayload))
		return r.sendRaw(closes, 0, append(b, frameOf(contract.OpSend, 0, wire.DataStream, 7, []byte{0})...))
	},
	"decompressed_too_large": func(r *caseRun, closes bool) caseOutcome {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			r.t.Fatal(err)
		}
		defer enc.Close()
		z := enc.EncodeAll(make([]byte, wire.MaxPayload+1), nil)
		return r.sendRaw(closes, 0, frameOf(contract.OpSend, wire.FlagCompressed, wire.DataStream, 7, z))
	},
	"bad_compression": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 0, frameOf(contract.OpSend, wire.FlagCompressed, wire.DataStream, 7, []byte("not zstd")))
	},
	"chunk_mismatch": func(r *caseRun, closes bool) caseOutcome {
		b := frameOf(contract.OpSend, wire.FlagMore, wire.DataStream, 7, []byte("first"))
		return r.sendRaw(closes, 0, append(b, frameOf(contract.OpPullMailbox, 0, wire.DataStream, 7, []byte("second"))...))
	},
	"too_many_streams": func(r *caseRun, closes bool) caseOutcome {
		var b []byte
		for stream := uint16(1); stream <= maxOpenStreams+1; stream++ {
			b = append(b, frameOf(contract.OpSend, wire.FlagMore, stream, uint32(stream), []byte("part"))...)
		}
		return r.sendRaw(closes, 0, b)
	},
	"server_drain": func(r *caseRun, closes bool) caseOutcome {
		h := startGateway(r.t, harnessOpts{})
		c := r.open(h)
		eventually(r.t, caseWait, "connection admitted", func() bool {
			h.svc.mu.Lock()
			defer h.svc.mu.Unlock()
			return len(h.svc.conns) == 1
		})
		stopped := make(chan error, 1)
		go func() { stopped <- h.stop() }()
		r.t.Cleanup(func() {
			if err := <-stopped; err != nil {
				r.t.Errorf("gateway stopped with %v", err)
			}
		})
		return r.observe(c, closes)
	},
	"gateway_full": func(r *caseRun, closes bool) caseOutcome {
		h := startGateway(r.t, harnessOpts{mutate: func(c *Config) { c.MaxConns = 1 }})
		dialTCP(r.t, h.addrs.TCP).auth(newIdentity(r.t, "first").token, 0)
		return r.observe(dialTCP(r.t, h.addrs.TCP), closes)
	},
	"auth_timeout": func(r *caseRun, closes bool) caseOutcome {
		h := startGateway(r.t, harnessOpts{mutate: func(c *Config) { c.AuthTimeout = 200 * time.Millisecond }})
		return r.observe(dialTCP(r.t, h.addrs.TCP), closes)
	},
	"not_auth_first": func(r *caseRun, closes bool) caseOutcome {
		b, _ := proto.Marshal(&qimv1.Ping{ClientTimeMs: 1})
		return r.sendRaw(closes, 3, frameOf(contract.OpPing, 0, wire.ControlStream, 3, b))
	},
	"auth_malformed": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 3, frameOf(contract.OpAuth, 0, wire.DataStream, 3, []byte{0xFF}))
	},
	"auth_refused": func(r *caseRun, closes bool) caseOutcome {
		id := newIdentity(r.t, "d")
		forged, _ := devtoken.Issue([]byte("another-secret-0123456789"), devtoken.Claims{Tenant: id.tenant, User: id.user,
			Device: id.device, ExpiresAtMs: time.Now().Add(time.Hour).UnixMilli()})
		b, _ := proto.Marshal(&qimv1.AuthRequest{Token: forged})
		return r.sendRaw(closes, 3, frameOf(contract.OpAuth, 0, wire.DataStream, 3, b))
	},
	"auth_rate_limited": func(r *caseRun, closes bool) caseOutcome {
		h := startGateway(r.t, harnessOpts{mutate: func(c *Config) { c.AuthFailureBurst, c.AuthFailureRefill = 1, time.Hour }})
		first := dialTCP(r.t, h.addrs.TCP)
		first.expectError(contract.ErrCodeUnauthorized, first.write(contract.OpAuth, &qimv1.AuthRequest{Token: "qim1.forged.token"}))
		b, _ := proto.Marshal(&qimv1.AuthRequest{Token: newIdentity(r.t, "d").token}) // valid, and still refused
		c := r.open(h)
		c.writeRaw(frameOf(contract.OpAuth, 0, wire.DataStream, 3, b))
		r.wantReqID = 3
		return r.observe(c, closes)
	},
	"auth_unavailable": func(r *caseRun, closes bool) caseOutcome {
		r.std.mailbox.failOnline.Store(true)
		defer r.std.mailbox.failOnline.Store(false)
		b, _ := proto.Marshal(&qimv1.AuthRequest{Token: newIdentity(r.t, "d").token})
		return r.sendRaw(closes, 3, frameOf(contract.OpAuth, 0, wire.DataStream, 3, b))
	},
	"auth_superseded": func(r *caseRun, closes bool) caseOutcome {
		id := newIdentity(r.t, "phone")
		newer := &session{key: userKey{id.tenant, id.user}, device: id.device, epoch: 1 << 62, conn: &conn{}}
		if _, err := r.std.svc.registry.register(newer); err != nil {
			r.t.Fatal(err)
		}
		defer r.std.svc.registry.unregister(newer)
		b, _ := proto.Marshal(&qimv1.AuthRequest{Token: id.token})
		return r.sendRaw(closes, 0, frameOf(contract.OpAuth, 0, wire.DataStream, 3, b))
	},
	"heartbeat_timeout": func(r *caseRun, closes bool) caseOutcome {
		h := startGateway(r.t, harnessOpts{mutate: func(c *Config) {
			c.HeartbeatInterval, c.HeartbeatTimeout = 100*time.Millisecond, 300*time.Millisecond
		}})
		return r.observe(r.open(h), closes)
	},
	"write_stalled": func(r *caseRun, closes bool) caseOutcome { return writeStalled(r) },
	"logout": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 0, frameOf(contract.OpLogout, 0, wire.DataStream, 3, nil))
	},
	"replaced": func(r *caseRun, closes bool) caseOutcome {
		id := newIdentity(r.t, "phone")
		old := dialTCP(r.t, r.std.addrs.TCP)
		old.auth(id.token, 0)
		dialTCP(r.t, r.std.addrs.TCP).auth(id.token, 0)
		return r.observe(old, closes)
	},
	"revoked": func(r *caseRun, closes bool) caseOutcome {
		id := newIdentity(r.t, "phone")
		c := dialTCP(r.t, r.std.addrs.TCP)
		c.auth(id.token, 0)
		rev := revocation.Revocation{Tenant: id.tenant, User: id.user, Device: id.device, NotBefore: time.Now()}
		if err := revocation.Revoke(context.Background(), r.std.svc.rdb, rev); err != nil {
			r.t.Fatal(err)
		}
		out := r.observe(c, closes)
		again := dialTCP(r.t, r.std.addrs.TCP)
		if e := again.expectError(contract.ErrCodeUnauthorized, again.write(contract.OpAuth, &qimv1.AuthRequest{Token: id.token})); e.GetMessage() != "credential revoked" {
			r.t.Errorf("AUTH with the revoked token: %q, want \"credential revoked\"", e.GetMessage())
		}
		return out
	},
	"kicked_by_admin": func(r *caseRun, closes bool) caseOutcome {
		id := newIdentity(r.t, "phone")
		c := dialTCP(r.t, r.std.addrs.TCP)
		c.auth(id.token, 0)
		other := dialTCP(r.t, r.std.addrs.TCP)
		laptop := id
		laptop.device = "laptop"
		other.auth(issue(r.t, laptop, time.Hour), 0)
		if n, err := revocation.Publish(context.Background(), r.std.svc.rdb, revocation.Kick{Tenant: id.tenant, User: id.user, Device: id.device}); err != nil || n == 0 {
			r.t.Fatalf("kick reached %d subscribers: %v", n, err)
		}
		out := r.observe(c, closes)
		// The credential is still good, and a device kick leaves the user's other devices alone.
		dialTCP(r.t, r.std.addrs.TCP).auth(id.token, 0)
		other.ping()
		return out
	},
	"credential_expired": func(r *caseRun, closes bool) caseOutcome {
		// The token lives an hour; the gateway is told its expiry is now, so the case cannot
		// race a short token against a busy machine.
		h := startGateway(r.t, harnessOpts{untilExpiry: func(time.Time) time.Duration { return 0 }})
		c := dialTCP(r.t, h.addrs.TCP)
		c.auth(newIdentity(r.t, "phone").token, 0)
		return r.observe(c, closes)
	},
	"second_auth": func(r *caseRun, closes bool) caseOutcome {
		b, _ := proto.Marshal(&qimv1.AuthRequest{Token: newIdentity(r.t, "d").token})
		return r.sendRaw(closes, 3, frameOf(contract.OpAuth, 0, wire.DataStream, 3, b))
	},
	"request_too_large": func(r *caseRun, closes bool) caseOutcome {
		if requestMaxBytes != 64<<10 {
			r.t.Fatalf("requestMaxBytes = %d; docs/protocol.md and the contract table say 64 KiB", requestMaxBytes)
		}
		b, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpPullMailbox, StreamID: wire.DataStream, RequestID: 3,
			Payload: make([]byte, requestMaxBytes+1)})
		if err != nil {
			r.t.Fatal(err)
		}
		return r.sendRaw(closes, 3, b)
	},
	"not_served": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 3, frameOf(0x7777, 0, wire.DataStream, 3, nil))
	},
	"malformed_request": func(r *caseRun, closes bool) caseOutcome {
		return r.sendRaw(closes, 3, frameOf(contract.OpSend, 0, wire.DataStream, 3, []byte{0xFF}))
	},
}

// writeStalled stops reading while the gateway answers pulls with 1 MiB batches, until the
// socket buffers are full and one write outlasts the write timeout.
func writeStalled(r *caseRun) caseOutcome {
	big := &qimv1.MailboxBatch{Entries: []*qimv1.MailboxEvent{{MailboxSeq: 1 << 48, Body: make([]byte, 1<<20)}}}
	h := startGateway(r.t, harnessOpts{mutate: func(c *Config) { c.WriteTimeout = 300 * time.Millisecond },
		mailbox: &fakeMailbox{pull: func(*internalv1.AuthenticatedPullMailbox) *internalv1.PullMailboxOutcome {
			return &internalv1.PullMailboxOutcome{Batch: big}
		}}})
	id := newIdentity(r.t, "slow")
	nc, err := net.DialTimeout("tcp", h.addrs.TCP, caseWait)
	if err != nil {
		r.t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.(*net.TCPConn).SetReadBuffer(256 << 10)
	auth, _ := proto.Marshal(&qimv1.AuthRequest{Token: id.token})
	rd := wire.NewReader(nc)
	if _, err := nc.Write(frameOf(contract.OpAuth, 0, wire.DataStream, 1, auth)); err != nil {
		r.t.Fatal(err)
	}
	if m, err := rd.ReadMessage(); err != nil || m.Opcode != contract.OpAuthOK {
		r.t.Fatalf("AUTH: %v %v", m.Opcode, err)
	}
	const pulls = 32 // 32 MiB of answers: far beyond what loopback socket buffers hold
	for i := range uint32(pulls) {
		if _, err := nc.Write(frameOf(contract.OpPullMailbox, 0, wire.DataStream, 2+i, nil)); err != nil {
			r.t.Fatal(err)
		}
	}
	eventually(r.t, caseWait, "stalled connection closed", func() bool {
		return len(h.svc.registry.appendConns(nil, userKey{id.tenant, id.user})) == 0
	})
	// What the socket buffers still hold: only MAILBOX_BATCH frames may be in it.
	var o caseOutcome
	for n := 0; ; n++ {
		m, err := rd.ReadMessage()
		if err != nil {
			o.closed = n < pulls
			return o
		}
		if m.Opcode != contract.OpMailboxBatch {
			o.reply = m.Opcode
		}
	}
}

func TestProtocolCases(t *testing.T) {
	std := startGateway(t, harnessOpts{})
	documented := map[string]bool{}
	for _, pc := range contract.ProtocolCases() {
		documented[pc.Name] = true
		scenario, ok := protocolScenarios[pc.Name]
		if !ok {
			t.Errorf("case %s is documented but has no scenario here", pc.Name)
			continue
		}
		for _, authed := range []bool{false, true} {
			phase := contract.BeforeAuth
			if authed {
				phase = contract.AfterAuth
			}
			if pc.Phase&phase == 0 {
				continue
			}
			t.Run(pc.Name+"/"+phase.String(), func(t *testing.T) {
				r := &caseRun{t: t, std: std, authed: authed}
				got := scenario(r, pc.Closes)
				want := caseOutcome{reply: pc.Reply, code: pc.Error, kick: pc.Kick, closed: pc.Closes}
				if pc.Reply == contract.OpError {
					want.reqID = r.wantReqID
				}
				if got != want {
					t.Fatalf("the server sent %v; contract.ProtocolCases documents %v", got, want)
				}
			})
		}
	}
	for name := range protocolScenarios {
		if !documented[name] {
			t.Errorf("scenario %s tests a case contract.ProtocolCases does not document", name)
		}
	}
}
