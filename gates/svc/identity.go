package svc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// GateIssuer is the iss of the JWTs the Set's identity provider signs, and GateAudience their
// aud: what the gateways' QIM_AUTH_ISSUERS file trusts.
const (
	GateIssuer   = "https://idp.qim-gate.invalid/"
	GateAudience = "qim"
	// GateTenantClaim carries the tenant in the gate IdP's tokens (a multi-tenant provider).
	GateTenantClaim = "tenant"
)

// startIdentity starts the Set's identity provider — a JWKS and a connect webhook on a loopback
// port, the stand-in for a product's IdP and backend — with one key of each algorithm, and writes
// the issuers file the gateways read. The provider lives until the Set's Close, not its
// StopAll: a stopped and restarted gateway must still reach it.
func (s *Set) startIdentity() error {
	idp, err := authntest.New(GateIssuer)
	if err != nil {
		return err
	}
	for _, alg := range []string{"EdDSA", "ES256", "RS256"} {
		if _, err := idp.AddKey(alg, false); err != nil {
			_ = idp.Close()
			return fmt.Errorf("svc: identity provider: %w", err)
		}
	}
	f := authn.IssuersFile{Issuers: []authn.Issuer{{Issuer: GateIssuer, Audience: GateAudience, TenantClaim: GateTenantClaim,
		JWKSURL: idp.URL()}}, ConnectWebhook: &authn.Webhook{URL: idp.HookURL()}}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, "issuers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		_ = idp.Close()
		return fmt.Errorf("svc: %w", err)
	}
	s.idp, s.issuersFile = idp, path
	return nil
}

// IdP is the identity provider the gateways trust (with the dev-token secret).
func (s *Set) IdP() *authntest.IdP { return s.idp }

// identityEnv adds the issuers file to a gateway's variables, unless the binary predates JWT
// issuers (an A/B baseline), which then accepts dev tokens only.
func (s *Set) identityEnv(vars map[string]string) {
	if s.TrustsIdP() {
		vars["QIM_AUTH_ISSUERS"] = s.issuersFile
	}
}

// TrustsIdP reports whether the gateways are given the issuers file (the binary knows it).
func (s *Set) TrustsIdP() bool {
	return s.issuersFile != "" && knows(s.bin, Gateway, "QIM_AUTH_ISSUERS")
}
