package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
)

const testSecret = "qimctl-test-secret-0123456789"

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestTokenIssueVerifies(t *testing.T) {
	t.Setenv("QIM_TOKEN_SECRET", testSecret)
	out, errOut, err := run(t, "token", "issue", "--user", "42", "--device", "phone-1",
		"--tenant", "000000000000000000000000000000ab", "--ttl", "1h")
	if err != nil {
		t.Fatalf("issue: %v (%s)", err, errOut)
	}
	token := strings.TrimSpace(out)
	if strings.Count(out, "\n") != 1 || token == "" {
		t.Fatalf("stdout must be exactly the token and a newline, got %q", out)
	}
	c, err := devtoken.Verify([]byte(testSecret), token, time.Now().UnixMilli())
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	want := contract.TenantID{Lo: 0xab}
	if c.User != 42 || c.Device != "phone-1" || c.Tenant != want {
		t.Fatalf("claims = %+v", c)
	}
	if ttl := time.Until(time.UnixMilli(c.ExpiresAtMs)); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("expiry %v from now, want ~1h", ttl)
	}
	if strings.Contains(errOut, testSecret) || strings.Contains(out, testSecret) {
		t.Fatal("the secret was printed")
	}
}

func TestTokenIssueSecretFile(t *testing.T) {
	t.Setenv("QIM_TOKEN_SECRET", "")
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "token", "issue", "--user", "7", "--device", "d", "--secret-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devtoken.Verify([]byte(testSecret), strings.TrimSpace(out), time.Now().UnixMilli()); err != nil {
		t.Fatalf("token from --secret-file (newline stripped) does not verify: %v", err)
	}
}

func TestTokenIssueRefusals(t *testing.T) {
	cases := []struct {
		name   string
		secret string
		args   []string
		want   error // nil: any error
	}{
		{"no secret", "", []string{"--user", "1", "--device", "d"}, devtoken.ErrNoSecret},
		{"weak secret", "short", []string{"--user", "1", "--device", "d"}, devtoken.ErrWeakSecret},
		{"zero user", testSecret, []string{"--user", "0", "--device", "d"}, devtoken.ErrInvalidClaims},
		{"missing device", testSecret, []string{"--user", "1"}, nil},
		{"bad tenant", testSecret, []string{"--user", "1", "--device", "d", "--tenant", "xyz"}, nil},
		{"negative ttl", testSecret, []string{"--user", "1", "--device", "d", "--ttl", "-1h"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("QIM_TOKEN_SECRET", c.secret)
			out, _, err := run(t, append([]string{"token", "issue"}, c.args...)...)
			if err == nil {
				t.Fatalf("want an error, got token %q", out)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if out != "" {
				t.Fatalf("stdout must stay empty on error, got %q", out)
			}
		})
	}
}
