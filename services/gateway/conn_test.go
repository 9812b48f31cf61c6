package gateway

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

func TestPingPong(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	c := h.login(newIdentity(t, "d"))
	p := c.ping()
	if p.GetClientTimeMs() != 12345 || p.GetServerTimeMs() == 0 ||
		p.GetHeartbeatIntervalMs() != uint32(contract.HeartbeatStart/time.Millisecond) || p.GetHeartbeatTimeoutMs() <= p.GetHeartbeatIntervalMs() {
		t.Fatalf("PONG = %v", p)
	}
}

func TestHeartbeatTimeoutClosesSilentConnection(t *testing.T) {
	h := startGateway(t, harnessOpts{mutate: func(c *Config) {
		c.HeartbeatInterval, c.HeartbeatTimeout = 150*time.Millisecond, 400*time.Millisecond
	}})
	alive := h.login(newIdentity(t, "a"))
	silent := h.login(newIdentity(t, "b"))
	// alive pings at the interval for well past the timeout and must survive.
	for deadline := time.Now().Add(900 * time.Millisecond); time.Now().Before(deadline); {
		alive.ping()
		time.Sleep(150 * time.Millisecond)
	}
	silent.expectClosed(2 * time.Second)
	alive.ping()
	if got := testutil.ToFloat64(h.svc.m.heartbeatClosed); got != 1 {
		t.Fatalf("heartbeat timeouts = %v, want 1", got)
	}
}

func TestUnimplementedOpcodesKeepConnectionOpen(t *testing.T) {
	// Without RoomWriters (QIM_ROOM_ADDRS unset) the room family is not served.
	h := startGateway(t, harnessOpts{mutate: func(c *Config) { c.RoomAddrs = nil }})
	c := h.login(newIdentity(t, "d"))
	for _, op := range []contract.Opcode{contract.OpReadSync, contract.OpJoinRoom, contract.OpSendAck, contract.Opcode(0x7777)} {
		id := c.nextID()
		c.writeBytes(op, id, []byte{})
		if e := c.expectError(contract.ErrCodeUnimplemented, id); contract.Opcode(e.GetRequestOpcode()) != op {
			t.Fatalf("%v: request_opcode = %d", op, e.GetRequestOpcode())
		}
	}
	id := c.write(contract.OpAuth, &qimv1.AuthRequest{Token: "x"})
	c.expectError(contract.ErrCodeInvalidArgument, id) // a second AUTH is refused, not re-run
	id = c.nextID()
	c.writeBytes(contract.OpPullMailbox, id, make([]byte, requestMaxBytes+1))
	c.expectError(contract.ErrCodePayloadTooLarge, id)
	c.ping()
}

// rawHeader builds a frame header by hand, so tests can break it.
func rawHeader(op contract.Opcode, length uint32) []byte {
	return wire.AppendHeader(nil, wire.Header{Opcode: op, StreamID: wire.DataStream, RequestID: 9, Length: length})
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	bystander := h.login(newIdentity(t, "bystander"))
	badCRC := rawHeader(contract.OpPing, 0)
	badCRC[19] ^= 0xFF
	badMagic := rawHeader(contract.OpPing, 0)
	badMagic[0] = 'X'
	badFlags := wire.AppendHeader(nil, wire.Header{Flags: wire.FlagNeedAck, Opcode: contract.OpPing})
	oversize := rawHeader(contract.OpSend, wire.MaxPayload+1)
	cases := []struct {
		name, reason string
		frame        []byte
		wantTooLarge bool
	}{
		{"bad magic", "bad_magic", badMagic, false},
		{"bad crc", "bad_crc", badCRC, false},
		{"need-ack flag", "bad_flags", badFlags, false},
		{"oversize", "oversize", oversize, true},
		{"http on the frame port", "bad_magic", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(h.svc.m.framesRejected.WithLabelValues(tc.reason))
			c := h.login(newIdentity(t, "victim"))
			c.writeRaw(tc.frame)
			if tc.wantTooLarge {
				c.expectError(contract.ErrCodePayloadTooLarge, 0)
			}
			c.expectClosed(3 * time.Second)
			if got := testutil.ToFloat64(h.svc.m.framesRejected.WithLabelValues(tc.reason)); got != before+1 {
				t.Fatalf("frames rejected{%s} = %v, want %v", tc.reason, got, before+1)
			}
			bystander.ping() // the server keeps serving everyone else
		})
	}
	// Before AUTH too: a broken first frame closes without an AUTH failure being invented.
	c := dialTCP(t, h.addrs.TCP)
	c.writeRaw(badCRC)
	c.expectClosed(3 * time.Second)
	bystander.ping()
}

func TestLogoutClosesConnection(t *testing.T) {
	h := startGateway(t, harnessOpts{})
	id := newIdentity(t, "d")
	c := h.login(id)
	c.writeBytes(contract.OpLogout, c.nextID(), nil)
	c.expectClosed(3 * time.Second)
	eventually(t, 2*time.Second, "session unregistered", func() bool {
		return len(h.svc.registry.appendConns(nil, userKey{id.tenant, id.user})) == 0
	})
}
