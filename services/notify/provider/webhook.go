package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/qim-dev/qim/services/authn"
)

// WebhookProvider posts each notification as JSON to the product's own endpoint, for products
// that run their own push relay (or none: a desktop app's long poll). Safe for concurrent use.
//
// Request: POST url, Content-Type application/json,
//
//	{"tenant": "<32 hex>", "user": 42, "device": "phone", "platform": "webhook", "token": "...",
//	 "app_id": "...", "conversation": "<32 hex>", "conversation_seq": 7,
//	 "message_id": "<32 hex>", "sender": 43, "badge": 3 (left out when unknown),
//	 "collapse_key": "..."}
//
// Answers: any 2xx is accepted; 410 Gone says the token is no longer valid (ErrTokenInvalid);
// 429 and 5xx are retryable, after Retry-After seconds when given; any other status is a
// request the endpoint will never take, so it is not retried.
type WebhookProvider struct {
	url     string
	client  *http.Client
	timeout time.Duration
}

// webhookBody is the webhook's wire form; golden-tested, so a change here is a contract change.
type webhookBody struct {
	Tenant          string   `json:"tenant"`
	User            uint64   `json:"user"`
	Device          string   `json:"device"`
	Platform        Platform `json:"platform"`
	Token           string   `json:"token"`
	AppID           string   `json:"app_id"`
	Conversation    string   `json:"conversation"`
	ConversationSeq uint64   `json:"conversation_seq"`
	MessageID       string   `json:"message_id"`
	Sender          uint64   `json:"sender"`
	Badge           *int     `json:"badge,omitempty"`
	CollapseKey     string   `json:"collapse_key"`
}

// NewWebhook is a provider posting to rawURL: https, or http on loopback only, because the
// body carries the device token. client nil means a new http.Client; timeout bounds one Send
// and must be positive (a zero would mean either "no bound" or "a default": refused).
func NewWebhook(rawURL string, client *http.Client, timeout time.Duration) (*WebhookProvider, error) {
	if err := checkEndpoint(rawURL); err != nil {
		return nil, fmt.Errorf("provider: webhook url: %w", err)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("provider: webhook timeout %s, want > 0", timeout)
	}
	if client == nil {
		client = &http.Client{}
	}
	return &WebhookProvider{url: rawURL, client: client, timeout: timeout}, nil
}

// Platform is Webhook.
func (w *WebhookProvider) Platform() Platform { return Webhook }

// Send posts n once.
func (w *WebhookProvider) Send(ctx context.Context, n Notification) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	body, err := json.Marshal(webhookBodyOf(n))
	if err != nil {
		return &SendError{Platform: Webhook, Err: fmt.Errorf("provider: encode webhook body: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return &SendError{Platform: Webhook, Err: fmt.Errorf("provider: webhook request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	a, err := roundTrip(w.client, req)
	if err != nil {
		return transportError(Webhook, err)
	}
	switch {
	case a.ok():
		return nil
	case a.status == http.StatusGone:
		return &SendError{Platform: Webhook, Status: a.status, Err: ErrTokenInvalid}
	}
	return a.statusError(Webhook, "")
}

func webhookBodyOf(n Notification) webhookBody {
	return webhookBody{
		Tenant: n.Tenant.String(), User: uint64(n.User), Device: n.DeviceID, Platform: Webhook,
		Token: n.Token, AppID: n.AppID, Conversation: n.Conversation.String(),
		ConversationSeq: n.ConversationSeq, MessageID: n.MessageID.String(), Sender: uint64(n.Sender),
		Badge: badge(n.Badge), CollapseKey: n.CollapseKey,
	}
}

// badge is n.Badge for an omitempty field: nil (left out) when the count is unknown.
func badge(b int) *int {
	if b < 0 {
		return nil
	}
	return &b
}

// The rest of this file is the HTTP plumbing the three providers share.

// maxAnswer bounds how much of an answer is read: every provider's error body is a few
// hundred bytes, and a success body is not needed at all.
const maxAnswer = 64 << 10

// answer is a provider's HTTP answer. The body is only ever parsed for a reason code: it is
// never logged or put in an error, since a misbehaving endpoint could echo the token back.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// roundTrip does req and reads at most maxAnswer bytes of the answer. A failure to read the
// body is ignored: the status already says whether the provider took the notification.
func roundTrip(c *http.Client, req *http.Request) (answer, error) {
	resp, err := c.Do(req)
	if err != nil {
		// A *url.Error quotes the URL, and an APNs URL ends in the device token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s: %w", ue.Op, ue.Err)
		}
		return answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// statusError is the default mapping of an unaccepted answer: 429 and 5xx are retryable after
// the provider's Retry-After, anything else is a request the provider will never take.
func (a answer) statusError(p Platform, reason string) *SendError {
	e := &SendError{Platform: p, Status: a.status, Reason: reason}
	if a.status == http.StatusTooManyRequests || a.status >= 500 {
		e.Retryable, e.RetryAfter = true, retryAfter(a.header)
	}
	return e
}

// transportError is a request that got no answer: the provider may never have seen it, so it
// is retryable (a duplicate push is harmless, the device pulls by seq).
func transportError(p Platform, err error) *SendError {
	return &SendError{Platform: p, Retryable: true, Err: fmt.Errorf("provider: %s send: %w", p, err)}
}

// retryAfter reads Retry-After in seconds, the form FCM and webhooks use; the HTTP-date form
// and anything unparsable count as no hint, and the caller's backoff applies.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// checkEndpoint accepts https URLs, and http ones on loopback (the stand-ins): every
// provider request carries a device token or a credential, which must not cross a network
// in clear.
func checkEndpoint(raw string) error { return authn.CheckSecureURL(raw) }
