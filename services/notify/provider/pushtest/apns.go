package pushtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/services/notify/provider"
)

// APNs stands in for Apple's provider API: TLS and HTTP/2 only, token-based trust. It owns an
// EC P-256 signing key (KeyP8, KeyID, TeamID) and checks the ES256 provider token on every
// request as Apple does: signature, kid, iss, and an iat at most an hour old on its clock.
type APNs struct {
	*Server
	key    *ecdsa.PrivateKey
	keyID  string
	teamID string

	// Guarded by Server.mu.
	seen    map[string]bool // provider tokens accepted at least once
	expired map[string]bool // provider tokens ExpireProviderTokens retired
}

const (
	// apnsTokenMaxAge is the oldest provider token Apple takes.
	apnsTokenMaxAge = time.Hour
	// apnsPayloadMax is Apple's limit on a notification's payload, in bytes.
	apnsPayloadMax = 4096
)

// StartAPNs starts an APNs stand-in on TLS with HTTP/2; Client trusts its certificate.
func StartAPNs(opts ...Option) (*APNs, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pushtest: apns signing key: %w", err)
	}
	// Apple's key and team ids are 10 upper-case alphanumerics.
	a := &APNs{Server: newServer(provider.APNs, opts), key: key,
		keyID: strings.ToUpper(randomHex(5)), teamID: strings.ToUpper(randomHex(5)),
		seen: map[string]bool{}, expired: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /3/device/{token}", a.serve)
	if err := a.start(mux, true); err != nil {
		return nil, err
	}
	return a, nil
}

// KeyP8 is the signing key as Apple issues it: PEM PKCS#8 (APNsConfig.KeyP8).
func (a *APNs) KeyP8() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(a.key)
	if err != nil {
		panic(fmt.Sprintf("pushtest: marshal a generated EC key: %v", err)) // cannot happen
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// KeyID is the key's id, the provider token's kid.
func (a *APNs) KeyID() string { return a.keyID }

// TeamID is the team the key belongs to, the provider token's iss.
func (a *APNs) TeamID() string { return a.teamID }

// ProviderTokens counts the distinct provider tokens accepted so far: how often the provider
// signed a new one.
func (a *APNs) ProviderTokens() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// ExpireProviderTokens makes every provider token seen so far answer 403
// ExpiredProviderToken, as Apple does to a token past its hour.
func (a *APNs) ExpireProviderTokens() {
	a.mu.Lock()
	for t := range a.seen {
		a.expired[t] = true
	}
	a.mu.Unlock()
}

// apnsWire is the payload the stand-in takes, decoded strictly.
type apnsWire struct {
	APS struct {
		Badge            *int `json:"badge"`
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

var deviceToken = regexp.MustCompile(`^([0-9a-fA-F]{2}){32,}$`)

// serve checks a push in Apple's order: protocol, provider token, headers, device token, payload.
func (a *APNs) serve(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		writeReason(w, http.StatusHTTPVersionNotSupported, "HTTP2Required") // Apple would not even answer
		return
	}
	if f := a.attempt(); f != nil {
		f.writeHeader(w)
		_ = json.NewEncoder(w).Encode(map[string]string{"reason": f.reason})
		return
	}
	if status, reason := a.checkToken(r.Header.Get("Authorization")); status != 0 {
		writeReason(w, status, reason)
		return
	}
	if reason := checkAPNsHeaders(r.Header); reason != "" {
		writeReason(w, http.StatusBadRequest, reason)
		return
	}
	tok := r.PathValue("token")
	if !deviceToken.MatchString(tok) {
		writeReason(w, http.StatusBadRequest, "BadDeviceToken")
		return
	}
	if a.isInvalid(tok) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_ = json.NewEncoder(w).Encode(map[string]any{"reason": "Unregistered", "timestamp": a.now().UnixMilli()})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, apnsPayloadMax)
	var m apnsWire
	if !decodeStrict(r, &m) || m.APS.Alert.LocKey == "" || m.APS.ContentAvailable != 1 ||
		!hex32.MatchString(m.QIM.Conversation) || !hex32.MatchString(m.QIM.MessageID) {
		writeReason(w, http.StatusBadRequest, "BadPayload")
		return
	}
	a.accept(apnsDelivery(tok, r.Header, m), r)
	w.Header().Set("apns-id", randomHex(16))
	w.WriteHeader(http.StatusOK)
}

func apnsDelivery(tok string, h http.Header, m apnsWire) Delivery {
	d := Delivery{Token: tok, AppID: h.Get("Apns-Topic"), Conversation: m.QIM.Conversation,
		ConversationSeq: m.QIM.ConversationSeq, MessageID: m.QIM.MessageID, Sender: m.QIM.Sender,
		Badge: -1, CollapseKey: h.Get("Apns-Collapse-Id")}
	if m.APS.Badge != nil {
		d.Badge = *m.APS.Badge
	}
	return d
}

// checkToken verifies "bearer <provider token>"; a zero status means accepted.
func (a *APNs) checkToken(h string) (int, string) {
	tok, ok := strings.CutPrefix(h, "bearer ")
	if !ok || tok == "" {
		return http.StatusForbidden, "MissingProviderToken"
	}
	iat, err := a.verify(tok)
	if err != nil {
		return http.StatusForbidden, "InvalidProviderToken"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.expired[tok] || a.now().Sub(iat) > apnsTokenMaxAge {
		return http.StatusForbidden, "ExpiredProviderToken"
	}
	a.seen[tok] = true
	return 0, ""
}

// verify checks the ES256 signature, kid and iss, and returns iat. The age is the caller's
// check, on the stand-in's clock (jwt's own checks would use time.Now).
func (a *APNs) verify(tok string) (time.Time, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != a.keyID {
			return nil, errors.New("unknown kid")
		}
		return &a.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(a.teamID))
	if err != nil {
		return time.Time{}, err
	}
	iat, err := claims.GetIssuedAt()
	if err != nil || iat == nil {
		return time.Time{}, errors.New("no iat")
	}
	return iat.Time, nil
}

// checkAPNsHeaders checks the headers the provider sets; "" means fine.
func checkAPNsHeaders(h http.Header) string {
	if _, err := strconv.ParseInt(h.Get("Apns-Expiration"), 10, 64); err != nil {
		return "BadExpirationDate"
	}
	switch {
	case h.Get("Apns-Topic") == "":
		return "MissingTopic"
	case h.Get("Apns-Push-Type") != "alert":
		return "InvalidPushType"
	case h.Get("Apns-Priority") != "10" && h.Get("Apns-Priority") != "5":
		return "BadPriority"
	case len(h.Get("Apns-Collapse-Id")) > 64:
		return "BadCollapseId"
	}
	return ""
}

// writeReason is Apple's error body: {"reason": "..."}.
func writeReason(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": reason})
}
