// Package pushtest holds stand-ins for the push providers (FCM HTTP v1, APNs over HTTP/2, a
// webhook relay) for tests and the harness, which runs them in-process. Each listens on a
// loopback port and checks what the real provider checks that the provider package could get
// wrong (credentials, headers, body shape), so the provider under test runs the code it runs
// in production: only the endpoint differs.
//
// Each records every accepted delivery in memory, and can be told to refuse: Fail answers every
// send with an error until Heal (outages, chaos), Invalidate makes one token answer the
// platform's token-invalid status. Tokens and credentials are never logged.
//
// Rejected: one fake behind an interface inside the provider package (it would test the fake,
// not the wire), and recorded real answers (the credentials flows sign with fresh keys, so
// only a live peer can check them).
package pushtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/qim-dev/qim/services/notify/provider"
)

// Delivery is one notification a stand-in accepted.
type Delivery struct {
	Platform provider.Platform
	Token    string
	AppID    string // the APNs topic, the webhook's app_id; empty for FCM
	// The webhook alone carries the recipient.
	Tenant string
	User   uint64
	Device string

	Conversation    string // 32 hex
	ConversationSeq uint64
	MessageID       string // 32 hex
	Sender          uint64
	Badge           int // -1 when the push carried none
	CollapseKey     string
	// Header is the request's header, Authorization removed (a credential).
	Header http.Header
}

// Server is what the three stand-ins share. Safe for concurrent use.
type Server struct {
	platform provider.Platform
	srv      *httptest.Server
	now      func() time.Time

	mu         sync.Mutex
	deliveries []Delivery
	attempts   int
	failure    *failure
	invalid    map[string]bool
}

// failure is what Fail makes every send answer.
type failure struct {
	status     int
	reason     string
	retryAfter time.Duration
}

// Option configures a stand-in.
type Option func(*Server)

// WithClock makes the stand-in measure token ages on now (default time.Now), so a test can
// age a provider token without waiting.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

func newServer(p provider.Platform, opts []Option) *Server {
	s := &Server{platform: p, now: time.Now, invalid: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// start serves h on a loopback port: over TLS with HTTP/2 when tls is set (APNs), plain HTTP
// otherwise. Unlike httptest.NewServer it returns a listen failure instead of panicking, for
// the harness's sake.
func (s *Server) start(h http.Handler, tls bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pushtest: %s stand-in: listen: %w", s.platform, err)
	}
	s.srv = &httptest.Server{Listener: ln, EnableHTTP2: tls,
		Config: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	return nil
}

// Platform is the platform the stand-in plays.
func (s *Server) Platform() provider.Platform { return s.platform }

// URL is the stand-in's base URL (the webhook's full URL).
func (s *Server) URL() string { return s.srv.URL }

// Client is an HTTP client that trusts the stand-in's TLS certificate (and speaks HTTP/2 to
// the APNs stand-in).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// CertPEM is the stand-in's TLS certificate in PEM (nil for a plain-HTTP stand-in), for a
// process that must trust it (the harness's QIM_NOTIFY_APNS_CA).
func (s *Server) CertPEM() []byte {
	c := s.srv.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Close stops the stand-in.
func (s *Server) Close() { s.srv.Close() }

// Deliveries is a copy of the accepted deliveries, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

// Count is how many times the message (32 hex) was accepted for token.
func (s *Server) Count(messageID, token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.deliveries {
		if d.MessageID == messageID && d.Token == token {
			n++
		}
	}
	return n
}

// Attempts counts the send requests received, accepted or not (token requests excluded).
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Fail makes every send answer status, with reason in the platform's error body, until Heal.
func (s *Server) Fail(status int, reason string) { s.FailWithRetryAfter(status, reason, 0) }

// FailWithRetryAfter is Fail with a Retry-After header of after (whole seconds) when after > 0.
func (s *Server) FailWithRetryAfter(status int, reason string, after time.Duration) {
	s.mu.Lock()
	s.failure = &failure{status: status, reason: reason, retryAfter: after}
	s.mu.Unlock()
}

// Heal ends Fail.
func (s *Server) Heal() {
	s.mu.Lock()
	s.failure = nil
	s.mu.Unlock()
}

// Invalidate makes token answer the platform's token-invalid status from now on.
func (s *Server) Invalidate(token string) {
	s.mu.Lock()
	s.invalid[token] = true
	s.mu.Unlock()
}

// attempt counts a send and returns the failure to answer, if any.
func (s *Server) attempt() *failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	return s.failure
}

func (s *Server) isInvalid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.invalid[token]
}

// accept records d, with r's header minus the credential.
func (s *Server) accept(d Delivery, r *http.Request) {
	d.Platform = s.platform
	d.Header = r.Header.Clone()
	d.Header.Del("Authorization")
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
}

// writeHeader sets Retry-After and the status; the caller writes the body after.
func (f *failure) writeHeader(w http.ResponseWriter) {
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter/time.Second)))
	}
	w.WriteHeader(f.status)
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// randomHex is n random bytes in hex: key ids, access tokens.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
