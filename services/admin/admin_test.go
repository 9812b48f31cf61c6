package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/authn/revocation"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

var update = flag.Bool("update", false, "rewrite docs/admin-api.json")

const (
	opsKey    = "ops-key-0123456789abcdef"
	tokenKey  = "token-key-0123456789abcdef"
	sessKey   = "sessions-key-0123456789abcdef"
	groupsKey = "groups-key-0123456789abcdef"
	msgKey    = "messages-key-0123456789abcdef"
	roomsKey  = "rooms-key-0123456789abcdef"
	secret    = "admin-test-secret-0123456789"
)

// fixture is the API over the stack's core Redis, with two keys of different scopes, and the
// audit log it wrote.
type fixture struct {
	srv   *httptest.Server
	api   *api
	rdb   *redis.Client
	audit *bytes.Buffer
}

func newFixture(t *testing.T, withSecret bool) *fixture {
	t.Helper()
	return newFixtureWith(t, func(c *Config) {
		if withSecret {
			c.TokenSecret = []byte(secret)
		}
	})
}

// newFixtureWith is newFixture with cfg changed by mutate; the internal RPC it configures is
// dialed as the service's start would.
func newFixtureWith(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys.json")
	body := `{"keys":[{"id":"ops","sha256":"` + KeyDigest(opsKey) + `","scopes":["revocations"]},` +
		`{"id":"tests","sha256":"` + KeyDigest(tokenKey) + `","scopes":["dev_tokens"]},` +
		`{"id":"sess","sha256":"` + KeyDigest(sessKey) + `","scopes":["sessions"]},` +
		`{"id":"groups","sha256":"` + KeyDigest(groupsKey) + `","scopes":["groups"]},` +
		`{"id":"messages","sha256":"` + KeyDigest(msgKey) + `","scopes":["messages"]},` +
		`{"id":"rooms","sha256":"` + KeyDigest(roomsKey) + `","scopes":["rooms"]}]}`
	if err := os.WriteFile(keys, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{KeysFile: keys, RedisAddr: itest.Endpoints(t).RedisCore}
	mutate(&cfg)
	f := &fixture{audit: &bytes.Buffer{}}
	s, err := New(cfg, slog.New(slog.NewTextHandler(f.audit, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.dialRPC(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.api.rooms != nil {
			_ = s.api.rooms.Close()
		}
	})
	f.rdb = redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	t.Cleanup(func() { _ = f.rdb.Close() })
	s.api.rdb = f.rdb
	f.api = s.api
	f.srv = httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) call(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// No key or a wrong one is 401, a key without the route's scope 403, and nothing is stored.
func TestKeysAndScopes(t *testing.T) {
	f := newFixture(t, true)
	body := `{"user": 77, "device": "phone"}`
	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {"not-a-key", 401}, {tokenKey, 403}} {
		if got, _ := f.call(t, http.MethodPost, "/v1/revocations", c.key, body); got != c.want {
			t.Errorf("key %q: %d, want %d", c.key, got, c.want)
		}
	}
	if n, _ := f.rdb.Exists(context.Background(), revocation.Key(contract.TenantID{}, 77)).Result(); n != 0 {
		t.Fatal("a refused call stored a revocation")
	}
}

// A revocation is stored (and lifted) through the API, and every call is in the audit log with
// its key's id — never the key or a token.
func TestRevokeLiftAndAudit(t *testing.T) {
	f := newFixture(t, true)
	ctx := context.Background()
	user := uint64(time.Now().UnixNano()>>8) | 1
	at := "2026-12-06T10:00:00Z"
	status, out := f.call(t, http.MethodPost, "/v1/revocations", opsKey, `{"user": `+jsonNum(user)+`, "device": "phone", "not_before": "`+at+`"}`)
	if status != 200 || out["not_before"] != at {
		t.Fatalf("revoke: %d %v", status, out)
	}
	nb, err := revocation.NotBefore(ctx, f.rdb, contract.TenantID{}, contract.UserID(user), "phone")
	if err != nil || nb.UTC().Format(time.RFC3339) != at {
		t.Fatalf("stored %v (%v), want %s", nb, err, at)
	}
	if status, _ := f.call(t, http.MethodDelete, "/v1/revocations", opsKey, `{"user": `+jsonNum(user)+`, "device": "phone"}`); status != 204 {
		t.Fatalf("lift: %d", status)
	}
	if nb, _ := revocation.NotBefore(ctx, f.rdb, contract.TenantID{}, contract.UserID(user), "phone"); !nb.IsZero() {
		t.Fatalf("still revoked after the lift: %v", nb)
	}
	status, tok := f.call(t, http.MethodPost, "/v1/dev-tokens", tokenKey, `{"user": 5, "device": "d"}`)
	if status != 200 {
		t.Fatalf("dev token: %d %v", status, tok)
	}
	if _, err := devtoken.Verify([]byte(secret), tok["token"].(string), time.Now().UnixMilli()); err != nil {
		t.Fatalf("minted token: %v", err)
	}
	log := f.audit.String()
	for _, want := range []string{"key=ops", "route=/v1/revocations", "status=200", "status=204", "key=tests", "user=" + jsonNum(user)} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %q:\n%s", want, log)
		}
	}
	for _, leak := range []string{opsKey, tokenKey, tok["token"].(string)} {
		if strings.Contains(log, leak) {
			t.Fatalf("audit log holds a secret:\n%s", log)
		}
	}
}

// Malformed bodies are 400 and store nothing; without a secret the dev-token route is 404.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, false)
	for _, body := range []string{`not json`, `{"user": 0}`, `{"user": 9, "devise": "phone"}`, `{"user": 9, "tenant": "xyz"}`,
		`{"user": 9, "not_before": "yesterday"}`} {
		if status, out := f.call(t, http.MethodPost, "/v1/revocations", opsKey, body); status != 400 || out["error"] == nil {
			t.Errorf("%s: %d %v, want 400 with an error", body, status, out)
		}
	}
	if status, _ := f.call(t, http.MethodPost, "/v1/dev-tokens", tokenKey, `{"user": 5, "device": "d"}`); status != 404 {
		t.Fatalf("dev token without a secret: %d, want 404", status)
	}
}

// docs/admin-api.json is OpenAPI() (go test ./services/admin -run OpenAPI -update rewrites it),
// and every route is in it.
func TestOpenAPIDocIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "admin-api.json")
	got := OpenAPI()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, got) {
		t.Fatalf("%s is stale (%v): go test ./services/admin -run OpenAPI -update", path, err)
	}
	for _, rt := range routes() {
		if !strings.Contains(string(got), `"`+rt.path+`"`) || !strings.Contains(string(got), `"`+strings.ToLower(rt.method)+`"`) {
			t.Errorf("%s %s is not in the document", rt.method, rt.path)
		}
	}
}

func jsonNum(u uint64) string { b, _ := json.Marshal(u); return string(b) }
