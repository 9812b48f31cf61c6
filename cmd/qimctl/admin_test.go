package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qim-dev/qim/services/admin"
)

// `qimctl revoke --admin` sends the revocation to the admin API with the key from the file, and
// --lift sends DELETE; a refusal is an error naming the status.
func TestRevokeThroughAdmin(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req admin.RevocationRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+req.Device)
		if req.User == 13 {
			http.Error(w, `{"error":"no"}`, http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "ops.key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(user uint64, lift bool) error {
		o := &revokeOptions{admin: srv.URL, keyFile: keyFile, user: user, device: "phone", before: "now", lift: lift}
		return runRevoke(context.Background(), o, func(string) string { return "" }, &bytes.Buffer{})
	}
	if err := run(42, false); err != nil {
		t.Fatal(err)
	}
	if err := run(42, true); err != nil {
		t.Fatal(err)
	}
	if err := run(13, false); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("refused: %v", err)
	}
	want := []string{"POST /v1/revocations Bearer k3y phone", "DELETE /v1/revocations Bearer k3y phone", "POST /v1/revocations Bearer k3y phone"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("requests %q, want %q", got, want)
	}
}
