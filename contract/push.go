package contract

// PushPlatform is the provider a device's offline-push token belongs to (qim.v1
// RegisterPushToken.platform, raw uint32 on the wire). Values are frozen once shipped.
type PushPlatform uint32

// The platforms a device can register a token for.
const (
	PushFCM     PushPlatform = 1 // Firebase Cloud Messaging HTTP v1 (Android, web)
	PushAPNs    PushPlatform = 2 // Apple Push Notification service (token-based auth, HTTP/2)
	PushWebhook PushPlatform = 3 // the deployment's own push relay
)

// Valid reports whether p is a platform this contract defines.
func (p PushPlatform) Valid() bool { return p >= PushFCM && p <= PushWebhook }

// String is the platform's name in metrics and logs.
func (p PushPlatform) String() string {
	switch p {
	case PushFCM:
		return "fcm"
	case PushAPNs:
		return "apns"
	case PushWebhook:
		return "webhook"
	}
	return "unknown"
}
