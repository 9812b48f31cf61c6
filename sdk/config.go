package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/qim-dev/qim/contract"
)

// TokenSource returns the bearer credential for the next AUTH. It is called once per connection
// attempt, so a source that refreshes tokens keeps a long-lived client authenticated. The SDK
// never logs or stores the token.
type TokenSource func(ctx context.Context) (string, error)

// StaticToken is a TokenSource that always returns tok.
func StaticToken(tok string) TokenSource {
	return func(context.Context) (string, error) { return tok, nil }
}

// Config configures a Client. Validate rejects bad values and fills the documented defaults; a
// zero value is a default only where that is unambiguous.
type Config struct {
	// DataDir is where the local store lives (required, absolute). The store path below it is
	// derived from the endpoint, tenant and user (store.Path), so it is stable across restarts;
	// there is no in-memory mode outside tests.
	DataDir string
	// Endpoint is the gateway (required). Mode tcp or tls; a pinned CAFingerprint is not
	// supported yet and is refused rather than ignored.
	Endpoint contract.Endpoint
	// Tenant is the user's tenant; the zero value is the single-tenant legacy tenant 0.
	Tenant contract.TenantID
	// User is the account (required, non-zero). The store is opened for it before any network
	// I/O; an AUTH_OK naming another user stops the client (ErrIdentity).
	User contract.UserID
	// Device is this installation's device id, 1..64 bytes of UTF-8 (required). It must match the
	// token's device. Two running clients with the same (user, device) evict each other once:
	// the older one is KICKED{REPLACED} and stops.
	Device string
	// Token supplies the credential for each AUTH (required).
	Token TokenSource
	// ClientVersion is sent in AUTH for metrics. Default "qim-go-sdk/1".
	ClientVersion string
	// DialTimeout bounds one TCP/TLS connection attempt. Default 5 s: below
	// contract.UnavailableDetectMax, so an unreachable gateway is reported within the contract's
	// 7 s; longer values only help on very slow links.
	DialTimeout time.Duration
	// WriteTimeout bounds one socket write. Default 5 s. A gateway that stops reading for longer
	// is treated as dead; shorter values cut large uploads on slow links.
	WriteTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential reconnect backoff (with jitter: each
	// delay is drawn from [d/2, d]). Defaults 250 ms and 30 s. A small minimum reconnects fast
	// after a blip; the maximum caps the load a fleet of clients puts on a recovering gateway.
	// A login the gateway refused with a retryable code (UNAVAILABLE) is not a dead network:
	// the delay after it starts at 250 ms (or ReconnectMin if smaller) and never exceeds 5 s
	// (or ReconnectMax if smaller), unless the gateway asked for longer with a retry-after.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// MaxInflightSends bounds SENDs awaiting their ACK on one connection. Default 128, at most
	// contract.WriterInflightPerConnDefault: above the gateway's window it stops reading our
	// socket, and a client blocked writing while the gateway waits to write ACKs would stall.
	MaxInflightSends int
	// PullLimit is the PULL_MAILBOX limit (entries per batch). Default 0 = the server default;
	// larger batches mean fewer round trips and larger SQLite transactions.
	PullLimit uint32
	// SessionListMax bounds the conversations merged from PULL_SESSION_LIST after each login
	// (pages of 100, most recent activity first). Default 10 000. The pull runs before pending
	// sends are released, and every page costs the server a history read per uncached row, so a
	// larger bound delays the first send of a heavy user's login; conversations beyond it keep
	// their local read state until their activity brings them into the bound.
	SessionListMax int
	// EventBuffer is the capacity of the Events channel. Default 256.
	EventBuffer int
	// EventBacklogPause: when this many events wait for an app that does not read Events, the
	// client stops issuing PULL_MAILBOX until half of them are read (the server keeps the data;
	// pushes are still stored). Default 10 000; the queue never drops MessagesAdded, Committed
	// or Failed, so this is what bounds its memory. Room events that arrive meanwhile are
	// dropped instead (Stats.RoomEventsShed; the next RoomEvents reports the Gap): a live room
	// cannot be paused, and queueing it for an app that does not read would grow without bound.
	EventBacklogPause int
	// Logger receives diagnostics (never tokens or bodies). Default: discard.
	Logger *slog.Logger
}

// Validate checks c and fills defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		errs = append(errs, errors.New("data dir must be an absolute directory (no in-memory store in production)"))
	}
	if _, err := c.Endpoint.Canonical(); err != nil {
		errs = append(errs, err)
	} else if c.Endpoint.Mode != contract.ModeTCP && c.Endpoint.Mode != contract.ModeTLS {
		errs = append(errs, fmt.Errorf("endpoint mode %q is not supported by this SDK (tcp, tls)", c.Endpoint.Mode))
	} else if c.Endpoint.CAFingerprint != "" {
		errs = append(errs, errors.New("endpoint CA pinning is not supported yet"))
	}
	if c.User == 0 {
		errs = append(errs, errors.New("user must not be zero"))
	}
	if c.Device == "" || len(c.Device) > 64 || !utf8.ValidString(c.Device) {
		errs = append(errs, errors.New("device must be 1..64 bytes of UTF-8"))
	}
	if c.Token == nil {
		errs = append(errs, errors.New("a token source is required"))
	}
	if c.MaxInflightSends < 0 || c.MaxInflightSends > contract.WriterInflightPerConnDefault {
		errs = append(errs, fmt.Errorf("max in-flight sends must be in [0, %d]", contract.WriterInflightPerConnDefault))
	}
	if c.ReconnectMin < 0 || c.ReconnectMax < 0 || c.DialTimeout < 0 || c.WriteTimeout < 0 || c.EventBuffer < 0 ||
		c.EventBacklogPause < 0 || c.SessionListMax < 0 {
		errs = append(errs, errors.New("durations and sizes must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.fillDefaults()
	if c.ReconnectMax < c.ReconnectMin {
		return fmt.Errorf("%w: reconnect max %v is below reconnect min %v", ErrInvalid, c.ReconnectMax, c.ReconnectMin)
	}
	return nil
}

func (c *Config) fillDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, 5*time.Second)
	def(&c.WriteTimeout, 5*time.Second)
	def(&c.ReconnectMin, 250*time.Millisecond)
	def(&c.ReconnectMax, 30*time.Second)
	if c.ClientVersion == "" {
		c.ClientVersion = "qim-go-sdk/1"
	}
	if c.MaxInflightSends == 0 {
		c.MaxInflightSends = 128
	}
	if c.SessionListMax == 0 {
		c.SessionListMax = 10_000
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = 256
	}
	if c.EventBacklogPause == 0 {
		c.EventBacklogPause = 10_000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}
