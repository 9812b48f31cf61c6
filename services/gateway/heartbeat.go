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

// onPing answers a PING with a PONG carrying the heartbeat schedule.
func (c *conn) onPing(m wire.Message) bool {
	var ping qimv1.Ping
	if err := proto.Unmarshal(m.Payload, &ping); err != nil {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "malformed Ping")
	}
	cfg := &c.s.cfg
	return c.reply(contract.OpPong, m.RequestID, &qimv1.Pong{
		ClientTimeMs:        ping.GetClientTimeMs(),
		ServerTimeMs:        time.Now().UnixMilli(),
		HeartbeatIntervalMs: uint32(cfg.HeartbeatInterval / time.Millisecond),
		HeartbeatTimeoutMs:  uint32(cfg.HeartbeatTimeout / time.Millisecond),
	})
}
