package provider

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// APNs endpoints.
const (
	DefaultAPNsEndpoint = "https://api.push.apple.com"
	APNsSandboxEndpoint = "https://api.sandbox.push.apple.com"
)

const (
	// apnsTokenReuse is how long one provider token is used. Apple refuses a token older
	// than 60 minutes and answers TooManyProviderTokenUpdates to a new one within 20, so a
	// token is replaced at 50: ten minutes of margin for clock skew either way.
	apnsTokenReuse = 50 * time.Minute
	// apnsCollapseMax is the limit Apple puts on apns-collapse-id, in bytes.
	apnsCollapseMax = 64
	// apnsLocKey is the alert's localization key: the device shows its own localized text, so
	// no text of ours crosses Apple.
	apnsLocKey = "qim.new_message"
)

// APNsConfig configures an APNsProvider with token-based (.p8 key) authentication.
type APNsConfig struct {
	// KeyP8 is the contents of the signing key file Apple issues (AuthKey_<KeyID>.p8: PEM
	// PKCS#8, EC P-256). Required.
	KeyP8 []byte
	// KeyID is the key's 10-character identifier, sent as the token's kid. Required.
	KeyID string
	// TeamID is the developer team the key belongs to, sent as the token's iss. Required.
	TeamID string
	// Endpoint is the APNs base URL. Default DefaultAPNsEndpoint; APNsSandboxEndpoint for
	// development builds of the app, a stand-in's URL in tests.
	Endpoint string
	// Client makes the requests. It must speak HTTP/2 (APNs has no HTTP/1): a
	// *http.Transport needs ForceAttemptHTTP2 or Protocols with HTTP/2. Default a new
	// http.Client on http.DefaultTransport.
	Client *http.Client
	// Timeout bounds one Send. Required.
	Timeout time.Duration
	// Now is the clock the provider token's age is measured on. Default time.Now.
	Now func() time.Time

	key *ecdsa.PrivateKey // parsed by Validate
}

// Validate parses the key, checks the values and fills the defaults.
func (c *APNsConfig) Validate() error {
	if c.Endpoint == "" {
		c.Endpoint = DefaultAPNsEndpoint
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.KeyID == "" || c.TeamID == "":
		return errors.New("provider: apns key id and team id are required")
	case c.Timeout <= 0:
		return fmt.Errorf("provider: apns timeout %s, want > 0", c.Timeout)
	}
	if err := checkEndpoint(c.Endpoint); err != nil {
		return fmt.Errorf("provider: apns endpoint: %w", err)
	}
	if err := speaksHTTP2(c.Client); err != nil {
		return err
	}
	key, err := jwt.ParseECPrivateKeyFromPEM(c.KeyP8)
	if err != nil {
		return fmt.Errorf("provider: apns key: %w", err)
	}
	if key.Curve.Params().Name != "P-256" {
		return fmt.Errorf("provider: apns key on %s, want P-256 (ES256)", key.Curve.Params().Name)
	}
	c.key = key
	return nil
}

// speaksHTTP2 refuses a transport that would talk HTTP/1.1: APNs would never answer it, and
// every notification would fail as a retryable transport error instead of at startup. It
// mirrors net/http's rule for enabling HTTP/2 (the deprecated Dial fields aside).
func speaksHTTP2(c *http.Client) error {
	t, ok := c.Transport.(*http.Transport)
	if !ok {
		return nil // nil is http.DefaultTransport; another RoundTripper is its owner's business
	}
	var h2 bool
	switch {
	case t.Protocols != nil:
		h2 = t.Protocols.HTTP2()
	case t.TLSNextProto != nil:
		h2 = t.TLSNextProto["h2"] != nil
	default:
		h2 = t.ForceAttemptHTTP2 || t.TLSClientConfig == nil && t.DialContext == nil && t.DialTLSContext == nil
	}
	if !h2 {
		return errors.New("provider: apns client transport without HTTP/2: set ForceAttemptHTTP2")
	}
	return nil
}

// APNsProvider sends through Apple's provider API over HTTP/2. Safe for concurrent use: one
// HTTP/2 connection multiplexes the concurrent Sends.
type APNsProvider struct {
	base    string
	client  *http.Client
	timeout time.Duration
	token   *providerToken
}

// NewAPNs validates cfg and makes an APNsProvider. No request is made until the first Send.
func NewAPNs(cfg APNsConfig) (*APNsProvider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &APNsProvider{
		base:    strings.TrimSuffix(cfg.Endpoint, "/"),
		client:  cfg.Client,
		timeout: cfg.Timeout,
		token:   &providerToken{key: cfg.key, keyID: cfg.KeyID, teamID: cfg.TeamID, now: cfg.Now},
	}, nil
}

// Platform is APNs.
func (p *APNsProvider) Platform() Platform { return APNs }

// Send makes one request. An ExpiredProviderToken or InvalidProviderToken answer replaces the
// provider token, so the retry it allows carries a new one.
func (p *APNsProvider) Send(ctx context.Context, n Notification) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	body, err := json.Marshal(apnsBodyOf(n))
	if err != nil {
		return &SendError{Platform: APNs, Err: fmt.Errorf("provider: encode apns body: %w", err)}
	}
	bearer, gen, err := p.token.get()
	if err != nil {
		return &SendError{Platform: APNs, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/3/device/"+url.PathEscape(n.Token), bytes.NewReader(body))
	if err != nil {
		return &SendError{Platform: APNs, Err: errors.New("provider: apns request: bad endpoint or token")}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "bearer "+bearer)
	h.Set("Apns-Topic", n.AppID)
	// An alert with content-available: shown at once, and the app may pull in the background.
	h.Set("Apns-Push-Type", "alert")
	h.Set("Apns-Priority", "10")
	// 0: delivered now or never. A stored push would be stale by the time the device is back,
	// and the device pulls its mailbox when it reconnects anyway.
	h.Set("Apns-Expiration", "0")
	if n.CollapseKey != "" {
		h.Set("Apns-Collapse-Id", truncateUTF8(n.CollapseKey, apnsCollapseMax))
	}
	a, err := roundTrip(p.client, req)
	if err != nil {
		return transportError(APNs, err)
	}
	if a.ok() {
		p.token.accepted()
		return nil
	}
	return p.refused(a, gen)
}

// refused maps Apple's answer: the status and the reason in its {"reason": "..."} body.
func (p *APNsProvider) refused(a answer, gen uint64) *SendError {
	var body struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(a.body, &body) // an unparsable body leaves the reason empty
	r := body.Reason
	switch {
	case a.status == http.StatusGone,
		a.status == http.StatusBadRequest && (r == "BadDeviceToken" || r == "DeviceTokenNotForTopic" || r == "Unregistered"):
		return &SendError{Platform: APNs, Status: a.status, Reason: r, Err: ErrTokenInvalid}
	case a.status == http.StatusForbidden && (r == "ExpiredProviderToken" || r == "InvalidProviderToken"):
		return &SendError{Platform: APNs, Status: a.status, Reason: r, Retryable: p.token.refused(gen)}
	case a.status == http.StatusTooManyRequests, a.status == http.StatusInternalServerError,
		a.status == http.StatusServiceUnavailable:
		return a.statusError(APNs, r)
	}
	return &SendError{Platform: APNs, Status: a.status, Reason: r}
}

// providerToken is the APNs provider token (an ES256 JWT: kid, iss = team id, iat), signed
// once and reused for apnsTokenReuse by every Send. It keeps the same invariants as
// accessTokens: of many Sends refused with one token only the first replaces it, and a
// refusal is retryable once, since a new token refused in turn means the key, key id or team
// id is wrong, and re-signing on every notification would only earn
// TooManyProviderTokenUpdates. Rejected: a token per request (Apple refuses a new token more
// often than every 20 minutes).
type providerToken struct {
	key    *ecdsa.PrivateKey
	keyID  string
	teamID string
	now    func() time.Time

	mu            sync.Mutex
	jwt           string // "" when none is valid
	issued        time.Time
	gen           uint64 // bumped on every new or dropped token
	refusedInARow int
}

// get is the current token, signed anew when none is cached or it is apnsTokenReuse old.
func (t *providerToken) get() (string, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.jwt != "" && now.Sub(t.issued) < apnsTokenReuse {
		return t.jwt, t.gen, nil
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": t.teamID, "iat": now.Unix()})
	tok.Header["kid"] = t.keyID
	s, err := tok.SignedString(t.key)
	if err != nil {
		return "", 0, fmt.Errorf("provider: sign apns provider token: %w", err)
	}
	t.jwt, t.issued, t.gen = s, now, t.gen+1
	return s, t.gen, nil
}

// refused drops the token of generation gen and reports whether the refused send may be retried.
func (t *providerToken) refused(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return true // already replaced: the retry uses the new token
	}
	t.jwt, t.gen = "", t.gen+1
	t.refusedInARow++
	return t.refusedInARow == 1
}

func (t *providerToken) accepted() {
	t.mu.Lock()
	t.refusedInARow = 0
	t.mu.Unlock()
}

// apnsBody is the APNs payload; golden-tested.
type apnsBody struct {
	APS struct {
		Badge            *int `json:"badge,omitempty"`
		ContentAvailable int  `json:"content-available"`
		Alert            struct {
			LocKey string `json:"loc-key"`
		} `json:"alert"`
	} `json:"aps"`
	QIM struct {
		Conversation    string `json:"conversation"`
		ConversationSeq uint64 `json:"conversation_seq"`
		MessageID       string `json:"message_id"`
		Sender          uint64 `json:"sender"`
	} `json:"qim"`
}

func apnsBodyOf(n Notification) *apnsBody {
	b := &apnsBody{}
	b.APS.Badge, b.APS.ContentAvailable, b.APS.Alert.LocKey = badge(n.Badge), 1, apnsLocKey
	b.QIM.Conversation, b.QIM.ConversationSeq = n.Conversation.String(), n.ConversationSeq
	b.QIM.MessageID, b.QIM.Sender = n.MessageID.String(), uint64(n.Sender)
	return b
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
