// Package provider is the NotificationService's side of the push providers: one Provider per
// platform (FCM HTTP v1, APNs over HTTP/2 with token auth, a generic webhook), each turning a
// Notification into one request to the provider and its answer into an error the caller can
// branch on.
//
// A notification carries coordinates, never the message body: the device wakes, connects and
// pulls (its mailbox is the source of truth), so a body never leaves the deployment through a
// third party and a push provider's logs hold no message content. Rejected: a preview body in
// the push (an opt-in product decision that needs per-tenant consent; not built).
//
// Errors: a *SendError says whether the same request may be retried and after how long;
// ErrTokenInvalid (wrapped in a *SendError that is not retryable) says the provider no longer
// knows the device token, so the caller forgets it.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Platform names a push provider. The values are the wire names clients register tokens
// under (qim.v1 PushPlatform) in lower case.
type Platform string

// The platforms a device can register a token for.
const (
	FCM     Platform = "fcm"
	APNs    Platform = "apns"
	Webhook Platform = "webhook"
)

// Notification is one push to one device.
type Notification struct {
	Tenant   contract.TenantID
	User     contract.UserID
	DeviceID string
	Token    string // the provider's device token (FCM registration token, APNs device token hex)
	// AppID is the app the token belongs to: the APNs topic (bundle id); ignored by FCM, whose
	// project is configured, and passed through by the webhook.
	AppID string

	Conversation    contract.ConversationID
	ConversationSeq uint64
	MessageID       contract.MessageID
	Sender          contract.UserID
	// Badge is the user's unread count when known, -1 when not (the field is then left out).
	Badge int
	// CollapseKey groups notifications on the device (one per conversation): APNs
	// apns-collapse-id, FCM collapse_key.
	CollapseKey string
}

// Provider sends notifications to one platform. Implementations are safe for concurrent use.
type Provider interface {
	// Send makes one request to the provider. A nil error means the provider accepted it.
	// Any other error is a *SendError.
	Send(ctx context.Context, n Notification) error
	// Platform is the platform the provider serves.
	Platform() Platform
}

// ErrTokenInvalid: the provider says the device token is unknown, expired or not for this
// app (APNs 410 Unregistered or 400 BadDeviceToken, FCM 404 UNREGISTERED or 400
// INVALID_ARGUMENT about the token). The caller forgets the token; retrying cannot succeed.
var ErrTokenInvalid = errors.New("provider: device token invalid")

// SendError is a failed Send.
type SendError struct {
	Platform  Platform
	Status    int    // HTTP status, 0 when no answer came (transport error, timeout)
	Reason    string // the provider's reason code when it gave one (never a token or a body)
	Retryable bool   // the same request may succeed later (5xx, 429, transport errors)
	// RetryAfter is the provider's Retry-After hint, 0 when none.
	RetryAfter time.Duration
	Err        error // ErrTokenInvalid, a transport error, or nil
}

func (e *SendError) Error() string {
	s := fmt.Sprintf("provider %s: status %d", e.Platform, e.Status)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SendError) Unwrap() error { return e.Err }

// Retryable reports whether err (from Send) may succeed when sent again, and the provider's
// hint of when.
func Retryable(err error) (bool, time.Duration) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Retryable, se.RetryAfter
	}
	return true, 0 // not a provider answer: a context or programming error, retry cautiously
}
