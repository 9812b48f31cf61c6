// Package moderation is the ModerationService's synchronous pre-send hook: the ConversationWriter
// asks the product's backend about every client SEND before it reserves a conversation_seq (the
// RoomWriter about every room SEND before it takes a room_seq), and the backend allows the
// message, rejects it with a reason code, or rewrites its body.
//
// Request: POST url, Content-Type application/json,
//
//	{"tenant": "<32 hex>", "sender": 42, "device": "phone", "conversation": "<32 hex>",
//	 "kind": "direct" | "group" | "room", "peer": 43 (direct only), "client_message_id": "<32 hex>",
//	 "message_type": 1, "custom_type": "", "mentions": [7], "body": "<base64>"}
//
// Answer 200 with {"action": "allow"}, {"action": "reject", "reason": "spam"} (a reason code of
// 1..64 characters from [A-Za-z0-9_.:-], shown to the sender in ErrorFrame.reason) or
// {"action": "rewrite", "body": "<base64>"}. Anything else — another status, a timeout, a
// malformed answer — is the hook being unavailable, and the writer applies its policy: refuse
// the SEND UNAVAILABLE (fail-closed, the default; the client retries with the same
// client_message_id) or commit it unchecked (fail-open, counted).
//
// Invariants: a rejected or refused SEND commits nothing (the hook runs before RESERVED); a
// SEND already committed under its idempotency key is never refused by a later answer of the
// hook (the writer checks before refusing, so a retry after a lost ACK still gets its original
// SEND_ACK); a rewrite changes only the body, and the idempotency identity stays the client's
// request, so a retry of the same request matches whatever the hook answers the second time.
//
// Rejected: calling the hook at the gateway (it cannot see whether a retry was already
// committed, and a second answer of the hook would then refuse a delivered message), and a
// gRPC hook (an HTTP/JSON endpoint is what the products' backends already serve for the
// peers' before-send callbacks).
package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// ErrUnavailable wraps every failure to get an answer: the writer's policy decides.
var ErrUnavailable = errors.New("moderation: hook unavailable")

// Action is the hook's decision.
type Action string

// The decisions a hook can answer.
const (
	Allow   Action = "allow"
	Reject  Action = "reject"
	Rewrite Action = "rewrite"
)

// Message is what the hook is told about one SEND.
type Message struct {
	Tenant          string   `json:"tenant"`
	Sender          uint64   `json:"sender"`
	Device          string   `json:"device"`
	Conversation    string   `json:"conversation"`
	Kind            string   `json:"kind"`
	Peer            uint64   `json:"peer,omitempty"`
	ClientMessageID string   `json:"client_message_id"`
	MessageType     uint32   `json:"message_type"`
	CustomType      string   `json:"custom_type"`
	Mentions        []uint64 `json:"mentions,omitempty"`
	Body            []byte   `json:"body"`
}

// Decision is the hook's answer.
type Decision struct {
	Action Action `json:"action"`
	Reason string `json:"reason,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// Options configure a Hook.
type Options struct {
	URL string
	// Timeout bounds one call, the wait for a free slot included; every moderated SEND's
	// SEND_ACK waits for it, so it spends the SEND_ACK latency budget (150 ms at P99).
	Timeout time.Duration
	// MaxConcurrency bounds the calls in flight per writer; a SEND that finds every slot busy
	// waits within Timeout.
	MaxConcurrency int
	// MaxBody is the largest body a rewrite may return (the writer's body limit).
	MaxBody int
	// Observe is told each call's outcome (allow, reject, rewrite, unavailable) and duration.
	Observe func(outcome string, took time.Duration)
}

// Hook calls the product's moderation endpoint. Safe for concurrent use.
type Hook struct {
	opts  Options
	http  *http.Client
	slots chan struct{}
}

// answerMaxBytes bounds the answer read: a rewrite's body plus JSON and base64 overhead.
func (o Options) answerMaxBytes() int64 { return int64(o.MaxBody)*4/3 + 64<<10 }

var reasonCode = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// New is a Hook on opts.URL.
func New(opts Options) *Hook {
	return &Hook{opts: opts, http: &http.Client{Timeout: opts.Timeout}, slots: make(chan struct{}, opts.MaxConcurrency)}
}

// Check asks the hook about m. The error wraps ErrUnavailable whenever no valid answer came.
func (h *Hook) Check(ctx context.Context, m *Message) (Decision, error) {
	start := time.Now()
	d, err := h.call(ctx, m)
	outcome := string(d.Action)
	if err != nil {
		outcome = "unavailable"
	}
	if h.opts.Observe != nil {
		h.opts.Observe(outcome, time.Since(start))
	}
	return d, err
}

func (h *Hook) call(ctx context.Context, m *Message) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-ctx.Done():
		return Decision{}, fmt.Errorf("%w: every one of %d calls busy", ErrUnavailable, cap(h.slots))
	}
	body, err := json.Marshal(m)
	if err != nil {
		return Decision{}, fmt.Errorf("moderation: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.opts.URL, bytes.NewReader(body))
	if err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, h.opts.answerMaxBytes()+1))
	if err != nil {
		return Decision{}, fmt.Errorf("%w: read answer: %v", ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Decision{}, fmt.Errorf("%w: status %d", ErrUnavailable, resp.StatusCode)
	}
	return h.parse(b)
}

// parse reads an answer; anything but a valid decision is the hook being unavailable, so a
// broken backend falls under the policy rather than letting messages through unannounced.
func (h *Hook) parse(b []byte) (Decision, error) {
	if int64(len(b)) > h.opts.answerMaxBytes() {
		return Decision{}, fmt.Errorf("%w: answer above %d bytes", ErrUnavailable, h.opts.answerMaxBytes())
	}
	var d Decision
	if err := json.Unmarshal(b, &d); err != nil {
		return Decision{}, fmt.Errorf("%w: malformed answer: %v", ErrUnavailable, err)
	}
	switch d.Action {
	case Allow:
		return Decision{Action: Allow}, nil
	case Reject:
		if !reasonCode.MatchString(d.Reason) {
			return Decision{}, fmt.Errorf("%w: reject without a reason code of 1..64 characters [A-Za-z0-9_.:-]", ErrUnavailable)
		}
		return Decision{Action: Reject, Reason: d.Reason}, nil
	case Rewrite:
		if len(d.Body) > h.opts.MaxBody {
			return Decision{}, fmt.Errorf("%w: rewritten body of %d bytes above the limit of %d", ErrUnavailable, len(d.Body), h.opts.MaxBody)
		}
		return Decision{Action: Rewrite, Body: d.Body}, nil
	}
	return Decision{}, fmt.Errorf("%w: unknown action %q", ErrUnavailable, d.Action)
}

// MessageOf builds the hook's view of a send; peer is 0 for a group's.
func MessageOf(tenant contract.TenantID, sender contract.UserID, device string, conv contract.ConversationID,
	peer contract.UserID, cmid contract.U128, msgType uint32, customType string, mentions []uint64, body []byte) *Message {
	return &Message{Tenant: tenant.String(), Sender: uint64(sender), Device: device, Conversation: conv.String(),
		Kind: conv.Kind().String(), Peer: uint64(peer), ClientMessageID: cmid.String(), MessageType: msgType,
		CustomType: customType, Mentions: mentions, Body: body}
}

// Outcome is a decision as a send path applies it under its policy.
type Outcome struct {
	Rewritten  bool   // Body replaces the send's body
	Body       []byte // the rewritten body
	FailedOpen bool   // the hook did not answer and the policy let the send through unchecked
	// Refusal is the send's answer when it must not go on (REJECTED with the hook's reason,
	// or UNAVAILABLE fail-closed); the caller still lets a retry of an already committed send
	// through.
	Refusal error
}

// Decide asks the hook about m and applies the policy: fail-open lets a send through unchecked
// when the hook does not answer, fail-closed refuses it UNAVAILABLE so the client retries.
func (h *Hook) Decide(ctx context.Context, m *Message, failOpen bool) Outcome {
	d, err := h.Check(ctx, m)
	switch {
	case err != nil && failOpen:
		return Outcome{FailedOpen: true}
	case err != nil:
		return Outcome{Refusal: rpc.Refuse(contract.ErrCodeUnavailable,
			"the moderation hook does not answer; retry later with the same client_message_id")}
	case d.Action == Reject:
		return Outcome{Refusal: rpc.Reject(d.Reason)}
	case d.Action == Rewrite:
		return Outcome{Rewritten: true, Body: d.Body}
	}
	return Outcome{}
}
