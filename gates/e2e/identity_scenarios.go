package e2e

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// NeedsIdP: the scenario needs gateways that trust the Set's identity provider (a deployment
// of this build's gateways, not a container deployment or an older binary).
const NeedsIdP = "gateways trusting the harness's JWT issuer"

// IdentityScenarios are the JWT logins of issue 37's first step, in run order: the rotation runs
// before the unknown-kid flood, which spends the gateways' refresh allowance.
func IdentityScenarios() []Scenario {
	return []Scenario{
		{"jwt-jwks-login-every-algorithm", needs(NeedsIdP, scenarioJWTLogin)},
		{"jwt-user-token-takes-the-device-from-auth", needs(NeedsIdP, scenarioJWTUserToken)},
		{"jwt-key-rotated-mid-run", needs(NeedsIdP, scenarioJWTRotation)},
		{"jwt-hostile-credentials-refused", needs(NeedsIdP, scenarioJWTHostile)},
		{"jwt-session-ends-at-token-expiry", needs(NeedsIdP, scenarioJWTExpiry)},
		{"connect-webhook-accepts-refuses-and-fails-closed", needs(NeedsIdP, scenarioWebhook)},
		{"failed-auth-flood-from-one-address-is-limited", needs(NeedsIdP, scenarioAuthFlood)},
		{"revoked-device-cut-off-within-a-second", needs(NeedsIdP, scenarioRevocation)},
		{"admin-api-revokes-with-an-audited-key", needs(NeedsIdP, scenarioAdminAPI)},
		{"admin-api-kicks-lists-devices-and-changes-groups", needs(NeedsIdP, scenarioAdminSessionsAndGroups)},
		{"admin-api-sends-system-messages", needs(NeedsIdP, scenarioAdminSystemMessages)},
	}
}

func (e *Env) idp() *authntest.IdP {
	if e.Set == nil {
		return nil
	}
	return e.Set.IdP()
}

// JWT signs a token of the Set's issuer with kid for (user, device); edit changes its claims.
func (e *Env) JWT(kid string, user contract.UserID, device string, edit func(jwt.MapClaims)) (string, error) {
	c := e.idp().Claims(uint64(user), device, time.Hour)
	c["tenant"] = e.Tenant.String()
	if edit != nil {
		edit(c)
	}
	return e.idp().Sign(kid, c, false)
}

// loginJWT authenticates user at its gateway with a token of kid.
func (e *Env) loginJWT(ctx context.Context, gateway, kid string, user contract.UserID, device string) (*Client, error) {
	tok, err := e.JWT(kid, user, device, nil)
	if err != nil {
		return nil, err
	}
	c, ok, err := e.authAt(ctx, gateway, tok, "")
	if err != nil {
		return nil, fmt.Errorf("AUTH with a %s JWT at %s: %w", kid, gateway, err)
	}
	if ok.GetUserId() != uint64(user) {
		c.Close()
		return nil, fmt.Errorf("AUTH_OK names user %d, the token %d", ok.GetUserId(), user)
	}
	return c, nil
}

// authAt dials gateway and authenticates with token (and device_id device); the connection is
// closed again when AUTH fails.
func (e *Env) authAt(ctx context.Context, gateway, token, device string) (*Client, *qimv1.AuthOk, error) {
	c, err := Dial(ctx, gateway)
	if err != nil {
		return nil, nil, err
	}
	ok, err := c.Auth(ctx, token, device, 0)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, ok, nil
}

// Each algorithm's JWKS key logs a user in, and the logins carry traffic: the EdDSA user's
// message reaches the others.
func scenarioJWTLogin(ctx context.Context, e *Env) error {
	var clients []*Client
	var users []contract.UserID
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, alg := range []string{"EdDSA", "ES256", "RS256"} {
		u := e.User()
		c, err := e.loginJWT(ctx, e.GatewayOf(u), e.idp().Kid(alg), u, "jwt-"+alg)
		if err != nil {
			return err
		}
		clients, users = append(clients, c), append(users, u)
	}
	for i := 1; i < len(users); i++ {
		if _, err := clients[0].Send(ctx, users[i], NewCmid(), []byte("signed in with a JWT")); err != nil {
			return fmt.Errorf("send to the %d-th JWT user: %w", i, err)
		}
		evs, _, err := PullUntil(ctx, clients[i], 0, func(evs []*qimv1.MailboxEvent) bool { return len(evs) > 0 })
		if err != nil {
			return fmt.Errorf("the %d-th JWT user pulls: %w", i, err)
		}
		if len(evs) == 0 {
			return fmt.Errorf("the %d-th JWT user got nothing", i)
		}
	}
	return nil
}

// A token without a device claim is the user's on any device: AUTH's device_id names it, and
// is required.
func scenarioJWTUserToken(ctx context.Context, e *Env) error {
	u := e.User()
	tok, err := e.JWT(e.idp().Kid("ES256"), u, "", nil)
	if err != nil {
		return err
	}
	c, _, err := e.authAt(ctx, e.GatewayOf(u), tok, "tablet")
	if err != nil {
		return fmt.Errorf("user-level token with device_id: %w", err)
	}
	defer c.Close()
	if _, _, err := e.authAt(ctx, e.GatewayOf(u), tok, ""); !isCode(err, contract.ErrCodeUnauthorized) {
		return fmt.Errorf("user-level token without device_id: %v, want UNAUTHORIZED", err)
	}
	return nil
}

// A key added to the JWKS mid-run is fetched once by each gateway, on the first token that names
// it; tokens of the older keys stay valid (a provider keeps them published until they expire).
func scenarioJWTRotation(ctx context.Context, e *Env) error {
	idp := e.idp()
	old := idp.Kid("EdDSA")
	base := idp.Fetches()
	kid, err := idp.AddKey("EdDSA", false)
	if err != nil {
		return err
	}
	for _, gw := range e.Gateways {
		for range 3 {
			c, err := e.loginJWT(ctx, gw, kid, e.User(), "rotated")
			if err != nil {
				return fmt.Errorf("rotated key: %w", err)
			}
			c.Close()
		}
		c, err := e.loginJWT(ctx, gw, old, e.User(), "older-key")
		if err != nil {
			return fmt.Errorf("the key before the rotation: %w", err)
		}
		c.Close()
	}
	if got := idp.Fetches() - base; got != int64(len(e.Gateways)) {
		return fmt.Errorf("the rotation cost %d JWKS fetches for %d gateways, want one each", got, len(e.Gateways))
	}
	return nil
}

// A session ends when its token does: KICKED{CREDENTIAL_EXPIRED} at exp, then the close; a
// fresh token logs the device in again. The 10 s bound is a hang guard, not a latency claim.
func scenarioJWTExpiry(ctx context.Context, e *Env) error {
	u := e.User()
	exp := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	tok, err := e.JWT(e.idp().Kid("EdDSA"), u, "expiring", func(c jwt.MapClaims) { c["exp"] = exp.Unix() })
	if err != nil {
		return err
	}
	c, _, err := e.authAt(ctx, e.GatewayOf(u), tok, "")
	if err != nil {
		return fmt.Errorf("AUTH with a token expiring at %s: %w", exp.Format(time.TimeOnly), err)
	}
	defer c.Close()
	select {
	case k := <-c.Kicked():
		if contract.KickReason(k.GetReason()) != contract.KickCredentialExpired {
			return fmt.Errorf("KICKED reason %d, want CREDENTIAL_EXPIRED", k.GetReason())
		}
		if early := time.Until(exp); early > 0 {
			return fmt.Errorf("kicked %s before the token's exp", early)
		}
	case <-c.Closed():
		return errors.New("the connection closed without KICKED{CREDENTIAL_EXPIRED}")
	case <-time.After(time.Until(exp) + 10*time.Second):
		return fmt.Errorf("no KICKED 10 s after the token's exp (%s)", exp.Format(time.TimeOnly))
	}
	select {
	case <-c.Closed():
	case <-time.After(10 * time.Second):
		return errors.New("the connection stayed open after KICKED{CREDENTIAL_EXPIRED}")
	}
	again, err := e.loginJWT(ctx, e.GatewayOf(u), e.idp().Kid("EdDSA"), u, "expiring")
	if err != nil {
		return fmt.Errorf("fresh token after the expiry: %w", err)
	}
	return again.Close()
}

// refusal is a hostile credential and the text the client must be told.
type refusal struct {
	name, token, device, message string
}

// Every hostile credential gets ERROR UNAUTHORIZED with its documented text, and a flood of
// made-up kids costs the provider at most one JWKS request per gateway.
func scenarioJWTHostile(ctx context.Context, e *Env) error {
	list, err := hostileCredentials(e)
	if err != nil {
		return err
	}
	base := e.idp().Fetches()
	for _, r := range list {
		if err := expectRefused(ctx, e, r); err != nil {
			return err
		}
	}
	if got := e.idp().Fetches() - base; got > int64(len(e.Gateways)) {
		return fmt.Errorf("%d hostile tokens cost %d JWKS fetches, want at most one per gateway (%d)", len(list), got, len(e.Gateways))
	}
	return nil
}

// hostileFrom is the source address of the hostile-credential scenario: its 30 refusals stay
// below the gateway's default per-address burst, but not with the other scenarios' on top.
const hostileFrom = "127.0.0.3"

func expectRefused(ctx context.Context, e *Env, r refusal) error {
	c, err := DialFrom(ctx, e.Gateway, hostileFrom)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Auth(ctx, r.token, r.device, 0)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != contract.ErrCodeUnauthorized || se.Msg != r.message {
		return fmt.Errorf("%s: AUTH = %v, want UNAUTHORIZED %q", r.name, err, r.message)
	}
	if _, err := c.Ping(ctx); err == nil {
		return fmt.Errorf("%s: the connection stayed open after the refusal", r.name)
	}
	return nil
}

func hostileCredentials(e *Env) ([]refusal, error) {
	idp, u, now := e.idp(), e.User(), time.Now()
	ed, rs := idp.Kid("EdDSA"), idp.Kid("RS256")
	var list []refusal
	add := func(name, message string, kid string, edit func(jwt.MapClaims)) error {
		tok, err := e.JWT(kid, u, "phone", edit)
		list = append(list, refusal{name: name, token: tok, message: message})
		return err
	}
	for _, c := range []struct {
		name, message string
		edit          func(jwt.MapClaims)
	}{
		{"expired", "token expired", func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }},
		{"not yet valid", "token not yet valid", func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }},
		{"wrong audience", "token claims refused", func(c jwt.MapClaims) { c["aud"] = "another-product" }},
		{"no tenant claim", "token claims refused", func(c jwt.MapClaims) { delete(c, "tenant") }},
		{"unknown issuer", "token issuer not accepted", func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" }},
	} {
		if err := add(c.name, c.message, ed, c.edit); err != nil {
			return nil, err
		}
	}
	der, err := x509.MarshalPKIXPublicKey(idp.PublicKey(rs))
	if err != nil {
		return nil, err
	}
	confused := jwt.NewWithClaims(jwt.SigningMethodHS256, idp.Claims(uint64(u), "phone", time.Hour))
	confused.Header["kid"] = rs
	hs, err := confused.SignedString(der)
	if err != nil {
		return nil, err
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, idp.Claims(uint64(u), "phone", time.Hour)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		return nil, err
	}
	good, err := e.JWT(ed, u, "phone", nil)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(good, ".")
	list = append(list,
		refusal{name: "HS256 signed with the RSA public key", token: hs, message: "invalid token"},
		refusal{name: "alg none", token: none, message: "invalid token"},
		refusal{name: "another token's signature", token: parts[0] + "." + parts[1] + "." + strings.Split(list[0].token, ".")[2], message: "invalid token"},
		refusal{name: "oversized", token: good + strings.Repeat("A", contract.CredentialMaxBytes), message: "invalid token"},
		// Neither a dev token nor a JWT: the connect webhook decides, and refuses it.
		refusal{name: "garbage", token: "definitely not a token", message: "credential rejected"})
	for i := range 20 {
		tok, err := e.JWT(ed, u, "phone", nil)
		if err != nil {
			return nil, err
		}
		list = append(list, refusal{name: fmt.Sprintf("made-up kid %d", i), token: renameKID(tok, fmt.Sprintf("made-up-%d-%d", u, i)), message: "invalid token"})
	}
	return list, nil
}

// renameKID rewrites a token's header kid; the signature no longer covers the header, but the
// key lookup comes first and must refuse the made-up kid without trusting anything else.
func renameKID(tok, kid string) string {
	parts := strings.SplitN(tok, ".", 3)
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return tok
	}
	var h map[string]any
	if json.Unmarshal(head, &h) != nil {
		return tok
	}
	h["kid"] = kid
	b, _ := json.Marshal(h)
	return base64.RawURLEncoding.EncodeToString(b) + "." + parts[1] + "." + parts[2]
}
