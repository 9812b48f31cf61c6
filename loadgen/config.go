package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
)

// Config is one load run. Validate fills the documented defaults; a zero value that could mean
// two things (a rate, a duration) is an error rather than a guess.
type Config struct {
	// Gateway is the gateway's TCP listener, host:port. Required.
	Gateway string
	// MoreGateways are the other gateways of a deployment with several (ADR-0027). Default none.
	// Raw connections are spread over Gateway and these by user id, so the two users of a 1:1
	// pair sit on different gateways and every push crosses between them; SDK lanes use Gateway.
	MoreGateways []string
	// TokenSecret signs the dev tokens of the run's users (contract/devtoken). Required, at
	// least devtoken.MinSecretBytes. Never logged or written to the report.
	TokenSecret []byte
	// Token, when set, makes the frame lane's AUTH tokens instead of dev tokens: opaque tokens a
	// connect webhook answers, say (the SDK lane keeps dev tokens). ttl is how long the token
	// must stay valid. Default nil.
	Token func(user contract.UserID, device string, ttl time.Duration) (string, error)
	// Tenant of every user of the run. Default: the zero tenant, as the e2e gate uses.
	Tenant contract.TenantID

	// Rate is the target ARRIVAL rate in msg/s across the frame lane (open model: the schedule
	// never waits for answers). Required, > 0.
	Rate float64
	// Duration of the measured window. Required, > 0.
	Duration time.Duration

	// Mode is ModeDirect (the default: 1:1 pairs) or ModeGroup (groups of GroupSize members,
	// group.go).
	Mode Mode
	// GroupSize is the members per group in ModeGroup, 1..contract.GroupMaxMembers; it must be
	// 0 in ModeDirect. Connections must be at least GroupSize and is rounded down to whole
	// groups.
	GroupSize int

	// RoomSize is the joined connections per room in ModeRoom (Connections is rounded down to
	// whole rooms); RoomSenders of each room's members publish, default min(4, RoomSize). Both
	// must be 0 in the other modes.
	RoomSize    int
	RoomSenders int

	// Connections is the number of message connections: in ModeDirect all of them in 1:1 pairs
	// (both sides of a pair send to each other), default 400, rounded up to even; in ModeGroup
	// the members of Connections/GroupSize groups, rounded down to whole groups. More
	// connections spread the rate thinner (each sends Rate/Connections msg/s) and cost the
	// gateway memory; fewer concentrate it and can hit the gateway's per-connection in-flight
	// window.
	Connections int
	// PingConnections is the PING control group: connections that only ping, so their RTT
	// separates machine and network delay from pipeline delay. Default 4.
	PingConnections int
	// PingInterval is how often each control connection pings. Default 100 ms.
	PingInterval time.Duration
	// BodyBytes is the message body size (timestamp header plus filler). Default 64, minimum
	// bodyHeaderBytes (32).
	BodyBytes int

	// InflightPerConn bounds SENDs awaiting an answer per connection. Default 4096: far above
	// normal (Rate/Connections × latency is well under 1), so the generator never throttles
	// itself silently; when it is reached the wait is counted (inflight_waits) and shows up
	// as generator lag instead of disappearing.
	InflightPerConn int
	// QueuePerConn bounds scheduled-but-unsent SENDs per connection. Default 1024. When full,
	// the scheduler drops the arrival and counts it as unsent: an impossible rate fails the
	// arrival check instead of exhausting memory or hanging.
	QueuePerConn int
	// AckTimeout is how long a SEND may wait for SEND_ACK or ERROR before it is counted as a
	// timeout (outcome unknown). Default 10 s.
	AckTimeout time.Duration
	// SettleTimeout bounds the wait, after the window, for every ACKed message to be pulled by
	// its recipient. Default 120 s; the wait also ends after SettleIdle without progress.
	SettleTimeout time.Duration
	// SettleIdle ends the settle wait early when no missing message arrived for this long.
	// Default 15 s.
	SettleIdle time.Duration
	// Window is the time-series resolution and the progress-line period. Default 5 s.
	Window time.Duration
	// DialConcurrency bounds concurrent dial+AUTH at start-up. Default 16.
	DialConcurrency int

	// Reconnect makes a connection (message or PING control connection) whose socket is lost or
	// kicked while the run goes on dial the gateway again with backoff (100 ms doubling to 2 s, jittered, until the run stops),
	// AUTH as the same user and device, and resume: queued arrivals are sent on the new link,
	// the pull worker continues from its cursor, the heartbeat goes on. SENDs pending on the lost
	// link stay unknown outcomes and are not resent. Default false: a perf run treats a lost
	// connection as a counted failure that ends that connection, as a capacity measurement must
	// (a reconnect storm would hide the loss behind lag). A chaos cell that kills the gateway sets
	// it.
	Reconnect bool
	// History receives the frame lane's history for the chaos checker (chaos/history, Lane
	// Frame): every SEND invoked and how it ended, every mailbox entry and push of this run
	// that a recipient read, and after the settle wait each pair's stored conversation
	// (PULL_HISTORY), which adds one read of every conversation to the end of the run. The SDK
	// lane records into the same recorder (Lane SDK). Nil (the default): nothing is recorded and
	// the hot paths build no events.
	History *history.Recorder

	// SDKClientsPercent is the share of connections driven by the SDK lane, 0..50. 0 disables
	// the lane (a capacity control run). It must be 0 in ModeGroup: the lane drives 1:1 pairs,
	// and a group run measures group delivery on every connection. When > 0 and SDKLane is nil, the run still measures
	// the frame lane with all connections but reports the lane as not available, which fails
	// its check: a lane that did not run never passes.
	SDKClientsPercent int
	// SDKLane is the SDK regression lane; nil in this package (the lead wires the SDK).
	SDKLane Lane

	// Thresholds are the pass criteria the report's verdicts use; zero fields take the contract
	// SLOs (Thresholds documents each).
	Thresholds Thresholds
	// CPU lists the processes whose CPU time is accounted over the measured window (services,
	// Redis, Kafka). Empty: no CPU evidence; the "cpu per message" check, when a budget asks for
	// it, then fails.
	CPU []Proc
	// Progress receives one line per Window. Nil: silent.
	Progress io.Writer
	// Label names the run in the report and the HTML title.
	Label string
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("loadgen: invalid config")

// Mode is what a run's message connections send to.
type Mode string

// Modes. The zero value is ModeDirect.
const (
	ModeDirect Mode = "direct" // 1:1 pairs
	ModeGroup  Mode = "group"  // groups of Config.GroupSize members, created at setup
	ModeRoom   Mode = "room"   // rooms of Config.RoomSize joined connections (room.go)
)

// ParseMode reads a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeDirect, ModeGroup, ModeRoom:
		return m, nil
	case "":
		return ModeDirect, nil
	}
	return "", fmt.Errorf("%w: mode %q: want %s, %s or %s", ErrConfig, s, ModeDirect, ModeGroup, ModeRoom)
}

// gatewayOf is the gateway a raw connection of user dials.
func (c *Config) gatewayOf(user contract.UserID) string {
	n := uint64(len(c.MoreGateways) + 1)
	if i := uint64(user) % n; i > 0 {
		return c.MoreGateways[i-1]
	}
	return c.Gateway
}

// Validate rejects bad values and fills defaults.
func (c *Config) Validate() error {
	for _, g := range append([]string{c.Gateway}, c.MoreGateways...) {
		if _, _, err := net.SplitHostPort(g); err != nil {
			return fmt.Errorf("%w: gateway %q: %v", ErrConfig, g, err)
		}
	}
	if len(c.TokenSecret) < devtoken.MinSecretBytes {
		return fmt.Errorf("%w: token secret shorter than %d bytes", ErrConfig, devtoken.MinSecretBytes)
	}
	if c.Rate <= 0 || c.Duration <= 0 {
		return fmt.Errorf("%w: rate (%.1f) and duration (%s) must be > 0", ErrConfig, c.Rate, c.Duration)
	}
	if c.SDKClientsPercent < 0 || c.SDKClientsPercent > 50 {
		return fmt.Errorf("%w: sdk clients %d%% not in [0, 50]", ErrConfig, c.SDKClientsPercent)
	}
	defInt(&c.Connections, 400)
	if err := c.validateMode(); err != nil {
		return err
	}
	defInt(&c.PingConnections, 4)
	defInt(&c.BodyBytes, 64)
	defInt(&c.InflightPerConn, 4096)
	defInt(&c.QueuePerConn, 1024)
	defInt(&c.DialConcurrency, 16)
	defDur(&c.PingInterval, 100*time.Millisecond)
	defDur(&c.AckTimeout, 10*time.Second)
	defDur(&c.SettleTimeout, 120*time.Second)
	defDur(&c.SettleIdle, 15*time.Second)
	defDur(&c.Window, 5*time.Second)
	if c.Connections < 1 || c.PingConnections < 0 || c.InflightPerConn < 1 || c.QueuePerConn < 1 {
		return fmt.Errorf("%w: connections %d, ping connections %d, in-flight %d, queue %d", ErrConfig,
			c.Connections, c.PingConnections, c.InflightPerConn, c.QueuePerConn)
	}
	if c.BodyBytes < bodyHeaderBytes || c.BodyBytes > contract.MaxFramePayload/2 {
		return fmt.Errorf("%w: body %d bytes not in [%d, %d]", ErrConfig, c.BodyBytes, bodyHeaderBytes, contract.MaxFramePayload/2)
	}
	return nil
}

// validateMode checks the mode's own rules and shapes Connections for it: even in ModeDirect,
// whole groups in ModeGroup.
func (c *Config) validateMode() error {
	if c.Mode == "" {
		c.Mode = ModeDirect
	}
	switch c.Mode {
	case ModeDirect:
		if c.GroupSize != 0 {
			return fmt.Errorf("%w: group size %d in %s mode (groups need mode %s)", ErrConfig, c.GroupSize, c.Mode, ModeGroup)
		}
		c.Connections += c.Connections % 2
	case ModeGroup:
		if c.GroupSize < 1 || c.GroupSize > contract.GroupMaxMembers {
			return fmt.Errorf("%w: group size %d not in [1, %d]", ErrConfig, c.GroupSize, contract.GroupMaxMembers)
		}
		if c.Connections < c.GroupSize {
			return fmt.Errorf("%w: %d connections cannot hold a group of %d: every member is a connection (pass at least --connections %d)",
				ErrConfig, c.Connections, c.GroupSize, c.GroupSize)
		}
		if c.SDKClientsPercent != 0 {
			return fmt.Errorf("%w: sdk clients %d%% in group mode: the SDK lane drives 1:1 pairs (pass 0)", ErrConfig, c.SDKClientsPercent)
		}
		c.Connections -= c.Connections % c.GroupSize
	case ModeRoom:
		return c.validateRoom()
	default:
		return fmt.Errorf("%w: mode %q: want %s, %s or %s", ErrConfig, c.Mode, ModeDirect, ModeGroup, ModeRoom)
	}
	if c.RoomSize != 0 || c.RoomSenders != 0 {
		return fmt.Errorf("%w: room size %d, room senders %d in %s mode (rooms need mode %s)", ErrConfig, c.RoomSize, c.RoomSenders, c.Mode, ModeRoom)
	}
	return nil
}

// validateRoom shapes a room run: whole rooms, at least one publisher per room, no SDK lane.
func (c *Config) validateRoom() error {
	defInt(&c.RoomSenders, min(4, max(c.RoomSize, 1)))
	switch {
	case c.GroupSize != 0 || c.SDKClientsPercent != 0:
		return fmt.Errorf("%w: group size %d, sdk clients %d%% in room mode (pass 0)", ErrConfig, c.GroupSize, c.SDKClientsPercent)
	case c.RoomSize < 1 || c.RoomSize > c.Connections:
		return fmt.Errorf("%w: room size %d not in [1, connections %d]: every member is a connection (pass --connections)", ErrConfig, c.RoomSize, c.Connections)
	case c.RoomSenders < 1 || c.RoomSenders > c.RoomSize:
		return fmt.Errorf("%w: room senders %d not in [1, room size %d]", ErrConfig, c.RoomSenders, c.RoomSize)
	}
	c.Connections -= c.Connections % c.RoomSize
	return nil
}

// sdkClients is how many connections the SDK lane gets (even, at least one pair when enabled).
func (c *Config) sdkClients() int {
	if c.SDKClientsPercent == 0 {
		return 0
	}
	n := (c.Connections*c.SDKClientsPercent + 99) / 100
	return max(2, n+n%2)
}

func defInt(p *int, d int) {
	if *p == 0 {
		*p = d
	}
}

func defDur(p *time.Duration, d time.Duration) {
	if *p == 0 {
		*p = d
	}
}
