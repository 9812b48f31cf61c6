package provider

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

const (
	// DefaultFCMEndpoint is FCM's API base URL.
	DefaultFCMEndpoint = "https://fcm.googleapis.com"
	// fcmScope is the OAuth2 scope that lets a service account send FCM messages.
	fcmScope = "https://www.googleapis.com/auth/firebase.messaging"
)

// FCMConfig configures an FCMProvider.
type FCMConfig struct {
	// ServiceAccountJSON is the contents of a Google service-account key file (type
	// "service_account", project_id, private_key as PEM PKCS#8 RSA, client_email, token_uri).
	// Required. The project it names is the one notifications are sent through.
	ServiceAccountJSON []byte
	// Endpoint is FCM's base URL. Default DefaultFCMEndpoint; tests point it at a stand-in
	// (https, or http on loopback).
	Endpoint string
	// Client makes the token exchanges and the sends. Default a new http.Client.
	Client *http.Client
	// Timeout bounds one Send, and one token exchange (which a Send may have to wait for).
	// Required: no default fits both a chat's latency and a slow token endpoint.
	Timeout time.Duration

	account serviceAccount // parsed by Validate
}

// serviceAccount is the part of a service-account key file FCM needs.
type serviceAccount struct {
	Type        string `json:"type"`
	ProjectID   string `json:"project_id"`
	PrivateKey  string `json:"private_key"`
	ClientEmail string `json:"client_email"`
	TokenURI    string `json:"token_uri"`
}

// Validate parses the service account, checks the values and fills the defaults.
func (c *FCMConfig) Validate() error {
	if c.Endpoint == "" {
		c.Endpoint = DefaultFCMEndpoint
	}
	if err := checkEndpoint(c.Endpoint); err != nil {
		return fmt.Errorf("provider: fcm endpoint: %w", err)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("provider: fcm timeout %s, want > 0", c.Timeout)
	}
	if err := json.Unmarshal(c.ServiceAccountJSON, &c.account); err != nil {
		return fmt.Errorf("provider: fcm service account: %w", err)
	}
	return c.account.validate()
}

func (a *serviceAccount) validate() error {
	switch {
	case a.Type != "service_account":
		return fmt.Errorf("provider: fcm service account: type %q, want service_account", a.Type)
	case a.ProjectID == "" || a.ClientEmail == "":
		return errors.New("provider: fcm service account: project_id and client_email are required")
	}
	if err := checkEndpoint(a.TokenURI); err != nil {
		return fmt.Errorf("provider: fcm service account token_uri: %w", err)
	}
	// Parsed here so that a broken key fails at startup, not at the first notification.
	block, _ := pem.Decode([]byte(a.PrivateKey))
	if block == nil {
		return errors.New("provider: fcm service account: private_key is not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("provider: fcm service account private_key: %w", err)
	}
	if _, ok := key.(*rsa.PrivateKey); !ok {
		return fmt.Errorf("provider: fcm service account private_key: %T, want RSA (RS256)", key)
	}
	return nil
}

// FCMProvider sends through FCM HTTP v1 as a service account. Safe for concurrent use.
//
// Authentication is OAuth2's JWT-bearer grant: an RS256 assertion signed with the account's
// key is exchanged at token_uri for an access token, which is cached (see accessTokens) and
// sent as a Bearer token. Rejected: signing our own exchange with golang-jwt (x/oauth2/jwt is
// the implementation Google's own client libraries use, and has the cache built in).
type FCMProvider struct {
	send    string // {Endpoint}/v1/projects/{project_id}/messages:send
	client  *http.Client
	timeout time.Duration
	tokens  *accessTokens
}

// NewFCM validates cfg and makes an FCMProvider. No request is made until the first Send.
func NewFCM(cfg FCMConfig) (*FCMProvider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	// The token source keeps the context it is made with for every exchange, so the exchange
	// cannot be bounded by a Send's context: bound it by the client's timeout instead.
	exchange := *client
	if exchange.Timeout == 0 || exchange.Timeout > cfg.Timeout {
		exchange.Timeout = cfg.Timeout
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &exchange)
	jc := &jwt.Config{Email: cfg.account.ClientEmail, PrivateKey: []byte(cfg.account.PrivateKey),
		Scopes: []string{fcmScope}, TokenURL: cfg.account.TokenURI}
	fresh := func() oauth2.TokenSource {
		// Refreshed a minute before expires_in runs out, so a token does not expire in flight.
		return oauth2.ReuseTokenSourceWithExpiry(nil, jc.TokenSource(ctx), time.Minute)
	}
	return &FCMProvider{
		send:    strings.TrimSuffix(cfg.Endpoint, "/") + "/v1/projects/" + url.PathEscape(cfg.account.ProjectID) + "/messages:send",
		client:  client,
		timeout: cfg.Timeout,
		tokens:  &accessTokens{fresh: fresh, src: fresh()},
	}, nil
}

// Platform is FCM.
func (p *FCMProvider) Platform() Platform { return FCM }

// Send makes one messages:send request (after a token exchange when no access token is
// cached). A 401 drops the cached token, so the retry it allows uses a new one.
func (p *FCMProvider) Send(ctx context.Context, n Notification) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	body, err := json.Marshal(fcmBodyOf(n))
	if err != nil {
		return &SendError{Platform: FCM, Err: fmt.Errorf("provider: encode fcm body: %w", err)}
	}
	tok, gen, err := p.tokens.get()
	if err != nil {
		return exchangeError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.send, bytes.NewReader(body))
	if err != nil {
		return &SendError{Platform: FCM, Err: fmt.Errorf("provider: fcm request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	a, err := roundTrip(p.client, req)
	if err != nil {
		return transportError(FCM, err)
	}
	if a.ok() {
		p.tokens.accepted()
		return nil
	}
	return p.refused(a, gen)
}

// refused maps FCM's error answer (see fcmError).
func (p *FCMProvider) refused(a answer, gen uint64) *SendError {
	e := parseFCMError(a.body)
	reason := e.code()
	switch {
	// FCM's 404 for a token says UNREGISTERED; a 404 without it is a wrong project or
	// endpoint, and forgetting every token on it would be unrecoverable.
	case reason == "UNREGISTERED",
		reason == "SENDER_ID_MISMATCH", // the token belongs to another project: never ours to send to
		a.status == http.StatusBadRequest && reason == "INVALID_ARGUMENT" && e.aboutToken():
		return &SendError{Platform: FCM, Status: a.status, Reason: reason, Err: ErrTokenInvalid}
	case a.status == http.StatusUnauthorized && reason != "THIRD_PARTY_AUTH_ERROR":
		// Our access token was refused (THIRD_PARTY_AUTH_ERROR is FCM's APNs or web push
		// credential, which a new token does not fix).
		return &SendError{Platform: FCM, Status: a.status, Reason: reason, Retryable: p.tokens.refused(gen)}
	}
	return a.statusError(FCM, reason)
}

// oauthErrorCode is the shape of an RFC 6749 error code (invalid_grant, invalid_client).
var oauthErrorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// exchangeError maps a failed token exchange. The token endpoint refusing the assertion (a
// revoked key, a clock far off) is not fixed by retrying; its 429, 5xx or no answer may be.
func exchangeError(err error) *SendError {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return &SendError{Platform: FCM, Reason: "token exchange", Retryable: true, Err: fmt.Errorf("provider: fcm token exchange: %w", err)}
	}
	// re's text quotes the endpoint's body: keep only the status and the OAuth2 error code
	// (x/oauth2/jwt leaves re.ErrorCode empty, so it is read here).
	var body struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(re.Body, &body)
	reason := "token exchange"
	if oauthErrorCode.MatchString(body.Error) {
		reason += " " + body.Error
	}
	st := re.Response.StatusCode
	return &SendError{Platform: FCM, Status: st, Reason: reason, Retryable: st == http.StatusTooManyRequests || st >= 500,
		RetryAfter: retryAfter(re.Response.Header), Err: fmt.Errorf("provider: fcm token exchange: status %d", st)}
}

// accessTokens caches FCM's access token. Its invariants: one exchange at a time (the
// ReuseTokenSource holds its lock while it fetches, so concurrent Sends wait for that one
// exchange rather than each making their own); of many Sends refused with the same token,
// only the first drops it (generations tell a refusal of the current token from a late one of
// a token already replaced); and a refusal is retryable once: when the token fetched after a
// refusal is refused too, the credentials are wrong rather than the token old, and retrying
// every notification would only turn each into another exchange. Rejected: oauth2.Transport,
// which hides the token a request carried, so a 401 could not drop the right one.
type accessTokens struct {
	fresh func() oauth2.TokenSource

	mu            sync.Mutex
	src           oauth2.TokenSource
	gen           uint64 // bumped when src is replaced
	refusedInARow int    // refusals since the last accepted send
}

func (t *accessTokens) get() (string, uint64, error) {
	t.mu.Lock()
	src, gen := t.src, t.gen
	t.mu.Unlock()
	tok, err := src.Token()
	if err != nil {
		return "", 0, err
	}
	return tok.AccessToken, gen, nil
}

// refused drops the token of generation gen and reports whether the refused send may be retried.
func (t *accessTokens) refused(gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return true // already replaced: the retry uses the new token
	}
	t.src, t.gen = t.fresh(), t.gen+1
	t.refusedInARow++
	return t.refusedInARow == 1
}

func (t *accessTokens) accepted() {
	t.mu.Lock()
	t.refusedInARow = 0
	t.mu.Unlock()
}

// fcmBody is FCM's wire form; golden-tested. Data values are strings because FCM refuses
// anything else in data.
type fcmBody struct {
	Message struct {
		Token   string            `json:"token"`
		Data    map[string]string `json:"data"`
		Android struct {
			CollapseKey string `json:"collapse_key,omitempty"`
			Priority    string `json:"priority"`
		} `json:"android"`
	} `json:"message"`
}

func fcmBodyOf(n Notification) *fcmBody {
	b := &fcmBody{}
	b.Message.Token = n.Token
	b.Message.Data = map[string]string{
		"conversation":     n.Conversation.String(),
		"conversation_seq": strconv.FormatUint(n.ConversationSeq, 10),
		"message_id":       n.MessageID.String(),
		"sender":           strconv.FormatUint(uint64(n.Sender), 10),
	}
	if n.Badge >= 0 {
		b.Message.Data["badge"] = strconv.Itoa(n.Badge)
	}
	// High priority wakes a dozing Android device now; the push is what makes it pull.
	b.Message.Android.CollapseKey, b.Message.Android.Priority = n.CollapseKey, "high"
	return b
}

// fcmError is FCM's error body: a google.rpc.Status whose details carry FCM's errorCode
// (UNREGISTERED, INVALID_ARGUMENT, QUOTA_EXCEEDED, UNAVAILABLE, ...) and, for some 400s, the
// offending field.
type fcmError struct {
	Error struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			ErrorCode       string `json:"errorCode"`
			FieldViolations []struct {
				Field string `json:"field"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

// parseFCMError reads what it can; an unparsable body leaves every field empty.
func parseFCMError(b []byte) fcmError {
	var e fcmError
	_ = json.Unmarshal(b, &e)
	return e
}

// code is the errorCode when FCM gave one, else the google.rpc status.
func (e fcmError) code() string {
	for _, d := range e.Error.Details {
		if d.ErrorCode != "" {
			return d.ErrorCode
		}
	}
	return e.Error.Status
}

// aboutToken tells an INVALID_ARGUMENT about the registration token from one about the
// message: only the former may make the caller forget the token, or a bug in our message would
// wipe every token. FCM says so in its message ("The registration token is not a valid FCM
// registration token") or, in some answers, with a field violation on message.token.
func (e fcmError) aboutToken() bool {
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			if v.Field == "message.token" {
				return true
			}
		}
	}
	return strings.Contains(e.Error.Message, "registration token")
}
