package gateway

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// The heartbeat: the client PINGs every heartbeat_interval_ms; the server answers PONG with the
// interval and timeout it wants, so intervals can change without an SDK release. Liveness is
// enforced by the read deadline in readLoop: a connection silent for longer than the timeout
// (2.5 intervals by default) is closed and counted. PONG is a control frame, so it overtakes a
// large MAILBOX_BATCH being written in 64 KiB chunks and is never delayed past the timeout.

// onPing answers a PING with a PONG carrying the heartbeat schedule, adapted to how long the
// connection has held and to the app state the PING reports (beat.go).
func (c *conn) onPing(m wire.Message, received time.Time) bool {
	var ping qimv1.Ping
	if err := proto.Unmarshal(m.Payload, &ping); err != nil {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "malformed Ping")
	}
	interval, timeout := c.hb.ping(received, ping.GetForeground())
	return c.reply(contract.OpPong, m.RequestID, &qimv1.Pong{
		ClientTimeMs:        ping.GetClientTimeMs(),
		ServerTimeMs:        received.UnixMilli(),
		HeartbeatIntervalMs: uint32(interval / time.Millisecond),
		HeartbeatTimeoutMs:  uint32(timeout / time.Millisecond),
	})
}
