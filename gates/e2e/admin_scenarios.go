package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/admin"
)

// The admin API, as a real `qim admin` process beside the deployment: a dev token minted
// through it logs a device in; a call without a key is 401; a revocation through it kicks the
// device within a second and refuses the token; the lift admits it again; the audit log names
// the key's id and holds neither the key nor the token.
func scenarioAdminAPI(ctx context.Context, e *Env) error {
	a, err := e.Set.StartAdmin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = a.Stop() }()
	u := e.User()
	var tok admin.DevTokenResponse
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/dev-tokens", admin.DevTokenRequest{Tenant: e.Tenant.String(), User: uint64(u), Device: "admin-phone"}, 200, &tok); err != nil {
		return err
	}
	c, _, err := e.authAt(ctx, e.GatewayOf(u), tok.Token, "")
	if err != nil {
		return fmt.Errorf("the minted dev token: %w", err)
	}
	defer c.Close()
	req := admin.RevocationRequest{Tenant: e.Tenant.String(), User: uint64(u), Device: "admin-phone"}
	if err := adminCall(ctx, a.URL, "", http.MethodPost, "/v1/revocations", req, 401, nil); err != nil {
		return err
	}
	start := time.Now()
	if err := adminCall(ctx, a.URL, a.Key, http.MethodPost, "/v1/revocations", req, 200, nil); err != nil {
		return err
	}
	if err := expectRevokedKick(c, start); err != nil {
		return fmt.Errorf("through the admin API: %w", err)
	}
	if _, _, err := e.authAt(ctx, e.GatewayOf(u), tok.Token, ""); !isServerError(err, contract.ErrCodeUnauthorized, "credential revoked") {
		return fmt.Errorf("the revoked token: %v, want UNAUTHORIZED \"credential revoked\"", err)
	}
	if err := adminCall(ctx, a.URL, a.Key, http.MethodDelete, "/v1/revocations", req, 204, nil); err != nil {
		return err
	}
	again, _, err := e.authAt(ctx, e.GatewayOf(u), tok.Token, "")
	if err != nil {
		return fmt.Errorf("the token after the lift: %w", err)
	}
	again.Close()
	return checkAudit(a.LogPath, a.KeyID, a.Key, tok.Token)
}

// checkAudit reads the admin API's log: three audited calls by keyID (the 401 names none), and
// neither the key nor the token anywhere.
func checkAudit(path, keyID, key, token string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	log := string(b)
	if strings.Contains(log, key) || strings.Contains(log, token) {
		return fmt.Errorf("the admin API's log holds the API key or a token")
	}
	if n := strings.Count(log, `"key":"`+keyID+`"`); n != 3 {
		return fmt.Errorf("%d audit lines name key %q, want 3 (dev token, revoke, lift; the 401 has no key)", n, keyID)
	}
	return nil
}

// adminCall sends body to the admin API and checks the status; out receives a JSON answer.
func adminCall(ctx context.Context, base, key, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("admin API %s %s: %s, want %d", method, path, resp.Status, want)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
