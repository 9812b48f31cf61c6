// Package moderationtest is a stand-in for a product's moderation endpoint (the peer of the
// writer's and RoomWriter's pre-send hook, services/internal/moderation), for tests and the
// harness. It speaks the hook's JSON with its own types, so a change of the wire on the product
// side shows up as a failing test here rather than as both sides changing together: bodies starting "spam" are rejected with reason "spam", the
// body "darn" is rewritten to "d**n", the body "slow" is answered after 300 ms, and anything
// else is allowed. SetDown makes it answer 503 to everything, as a backend in an outage does.
package moderationtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"
)

// message is the part of the hook's request the stand-in reads.
type message struct {
	Body []byte `json:"body"`
}

// decision is the hook's answer.
type decision struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// Words the stand-in acts on.
const (
	RejectPrefix  = "spam"
	RejectReason  = "spam"
	RewriteFrom   = "darn"
	RewriteTo     = "d**n"
	SlowBody      = "slow"
	SlowAnswerFor = 300 * time.Millisecond
)

// Server is the stand-in, on a loopback port.
type Server struct {
	srv   *httptest.Server
	down  atomic.Bool
	calls atomic.Int64
}

// New starts a stand-in.
func New() *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	var m message
	if s.down.Load() || json.NewDecoder(r.Body).Decode(&m) != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	d := decision{Action: "allow"}
	switch {
	case bytes.HasPrefix(m.Body, []byte(RejectPrefix)):
		d = decision{Action: "reject", Reason: RejectReason}
	case string(m.Body) == RewriteFrom:
		d = decision{Action: "rewrite", Body: []byte(RewriteTo)}
	case string(m.Body) == SlowBody:
		time.Sleep(SlowAnswerFor)
	}
	_ = json.NewEncoder(w).Encode(d)
}

// URL is the endpoint to configure as QIM_MODERATION_URL.
func (s *Server) URL() string { return s.srv.URL }

// SetDown makes every call fail (true) or answer again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Calls counts the requests received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Close stops the stand-in.
func (s *Server) Close() { s.srv.Close() }
