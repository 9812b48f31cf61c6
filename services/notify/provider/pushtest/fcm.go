package pushtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/services/notify/provider"
)

// FCM stands in for FCM HTTP v1 and for Google's OAuth2 token endpoint. It owns a
// service-account key: ServiceAccountJSON is a key file whose token_uri points here, POST
// /token checks the RS256 assertion against that key and issues access tokens, and sends
// must carry one of them as a Bearer token.
type FCM struct {
	*Server
	key     *rsa.PrivateKey
	project string
	email   string

	// Guarded by Server.mu.
	access        map[string]time.Time // access token -> expiry on Server.now
	tokenRequests int
}

// The service account the stand-in plays.
const (
	FCMProject = "qim-pushtest"
	fcmEmail   = "notify@qim-pushtest.iam.gserviceaccount.com"
	fcmScope   = "https://www.googleapis.com/auth/firebase.messaging"
	// accessTTL is the lifetime Google gives an access token.
	accessTTL = time.Hour
)

// StartFCM starts an FCM stand-in on plain HTTP (the provider allows http on loopback).
func StartFCM(opts ...Option) (*FCM, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("pushtest: fcm service-account key: %w", err)
	}
	f := &FCM{Server: newServer(provider.FCM, opts), key: key, project: FCMProject, email: fcmEmail,
		access: map[string]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", f.serveToken)
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", f.serveSend)
	if err := f.start(mux, false); err != nil {
		return nil, err
	}
	return f, nil
}

// ServiceAccountJSON is a service-account key file for the stand-in (FCMConfig.ServiceAccountJSON).
func (f *FCM) ServiceAccountJSON() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		panic(fmt.Sprintf("pushtest: marshal a generated RSA key: %v", err)) // cannot happen
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": f.project, "private_key_id": "pushtest",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": f.email, "client_id": "1", "token_uri": f.tokenURI(),
	})
	return b
}

func (f *FCM) tokenURI() string { return f.URL() + "/token" }

// TokenRequests counts the requests to the token endpoint, refused ones included.
func (f *FCM) TokenRequests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenRequests
}

// ExpireAccessTokens forgets every access token issued so far: sends carrying one answer 401,
// as FCM does to a token past its hour or revoked.
func (f *FCM) ExpireAccessTokens() {
	f.mu.Lock()
	clear(f.access)
	f.mu.Unlock()
}

// serveToken is the JWT-bearer grant (RFC 7523) as Google's token endpoint runs it.
func (f *FCM) serveToken(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.tokenRequests++
	f.mu.Unlock()
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeOAuthError(w, "unsupported_grant_type", "want the jwt-bearer grant")
		return
	}
	if err := f.verifyAssertion(r.PostForm.Get("assertion")); err != nil {
		writeOAuthError(w, "invalid_grant", err.Error())
		return
	}
	tok := "ya29.pushtest-" + randomHex(24)
	f.mu.Lock()
	f.access[tok] = f.now().Add(accessTTL)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "token_type": "Bearer", "expires_in": int(accessTTL/time.Second) - 1})
}

// verifyAssertion checks what Google checks: the signature by the account's key, iss, aud,
// the scope, and a lifetime of at most an hour. Its clock is time.Now whatever WithClock says,
// because x/oauth2 signs assertions on time.Now.
func (f *FCM) verifyAssertion(a string) error {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(a, claims, func(*jwt.Token) (any, error) { return &f.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(f.email), jwt.WithAudience(f.tokenURI()),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return fmt.Errorf("assertion: %w", err)
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if iat == nil || exp.Sub(iat.Time) > time.Hour {
		return errors.New("assertion: iat missing or lifetime above an hour")
	}
	scope, _ := claims["scope"].(string)
	if !slices.Contains(strings.Fields(scope), fcmScope) {
		return errors.New("assertion: scope firebase.messaging missing")
	}
	return nil
}

func writeOAuthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// fcmWire is the send body the stand-in takes, decoded strictly.
type fcmWire struct {
	Message struct {
		Token   string            `json:"token"`
		Data    map[string]string `json:"data"`
		Android *struct {
			CollapseKey string `json:"collapse_key"`
			Priority    string `json:"priority"`
		} `json:"android"`
	} `json:"message"`
}

// fcmTokenChars is the alphabet of FCM registration tokens.
var fcmTokenChars = regexp.MustCompile(`^[A-Za-z0-9_:\-]+$`)

// serveSend is projects.messages.send, checked in FCM's order: project, credential, body.
func (f *FCM) serveSend(w http.ResponseWriter, r *http.Request) {
	if fl := f.attempt(); fl != nil {
		writeFCMError(w, fl, fl.reason, "pushtest: failing as told")
		return
	}
	if r.PathValue("project") != f.project {
		writeFCMError(w, &failure{status: http.StatusForbidden}, "", "Permission denied on the project.")
		return
	}
	if !f.authorized(r.Header.Get("Authorization")) {
		writeFCMError(w, &failure{status: http.StatusUnauthorized}, "", "Request had invalid authentication credentials.")
		return
	}
	var m fcmWire
	if !decodeStrict(r, &m) {
		writeFCMError(w, &failure{status: http.StatusBadRequest}, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	tok := m.Message.Token
	switch d, ok := fcmDelivery(m); {
	case !fcmTokenChars.MatchString(tok):
		writeFCMError(w, &failure{status: http.StatusBadRequest}, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token")
	case f.isInvalid(tok):
		writeFCMError(w, &failure{status: http.StatusNotFound}, "UNREGISTERED", "Requested entity was not found.")
	case !ok:
		writeFCMError(w, &failure{status: http.StatusBadRequest}, "INVALID_ARGUMENT", "Request contains an invalid argument.")
	default:
		f.accept(d, r)
		_ = json.NewEncoder(w).Encode(map[string]string{"name": "projects/" + f.project + "/messages/" + randomHex(8)})
	}
}

func (f *FCM) authorized(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	exp, known := f.access[tok]
	return ok && known && f.now().Before(exp)
}

// fcmDataKeys are the data keys the provider sends; any other is a contract change.
var fcmDataKeys = []string{"conversation", "conversation_seq", "message_id", "sender", "badge"}

// fcmDelivery checks the data the provider promises (string values, ids in 32 hex) and the
// Android options, and makes the Delivery.
func fcmDelivery(m fcmWire) (Delivery, bool) {
	data, a := m.Message.Data, m.Message.Android
	d := Delivery{Token: m.Message.Token, Conversation: data["conversation"], MessageID: data["message_id"], Badge: -1}
	for k := range data {
		if !slices.Contains(fcmDataKeys, k) {
			return d, false
		}
	}
	var err1, err2, err3 error
	d.ConversationSeq, err1 = strconv.ParseUint(data["conversation_seq"], 10, 64)
	d.Sender, err2 = strconv.ParseUint(data["sender"], 10, 64)
	if b, ok := data["badge"]; ok {
		var n uint64
		n, err3 = strconv.ParseUint(b, 10, 31)
		d.Badge = int(n)
	}
	if a != nil {
		d.CollapseKey = a.CollapseKey
	}
	ok := errors.Join(err1, err2, err3) == nil && hex32.MatchString(d.Conversation) &&
		hex32.MatchString(d.MessageID) && a != nil && (a.Priority == "high" || a.Priority == "normal")
	return d, ok
}

// writeFCMError writes a google.rpc.Status with FCM's errorCode in its details.
func writeFCMError(w http.ResponseWriter, fl *failure, errorCode, message string) {
	e := map[string]any{"code": fl.status, "message": message, "status": rpcStatus(fl.status)}
	if errorCode != "" {
		e["details"] = []map[string]string{{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode}}
	}
	w.Header().Set("Content-Type", "application/json")
	fl.writeHeader(w)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// rpcStatus is the google.rpc code name Google's APIs pair with an HTTP status.
func rpcStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusInternalServerError:
		return "INTERNAL"
	}
	return "UNKNOWN"
}

// decodeStrict reads a JSON body of at most 64 KiB with no unknown fields.
func decodeStrict(r *http.Request, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil
}
