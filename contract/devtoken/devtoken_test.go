package devtoken

import (
	"errors"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
)

var secret = []byte("0123456789abcdef-test-secret")

func TestIssueVerifyRoundTripAndRejections(t *testing.T) {
	c := Claims{Tenant: contract.U128{Lo: 7}, User: 42, Device: "laptop", ExpiresAtMs: 2_000}
	tok, err := Issue(secret, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(secret, tok, 1_000)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	cases := []struct {
		name  string
		token string
		now   int64
		key   []byte
		want  error
	}{
		{"expired", tok, 2_000, secret, ErrExpired},
		{"other secret", tok, 1_000, []byte("another-secret-of-16+"), ErrBadSignature},
		{"tampered payload", tok[:6] + flip(tok[6]) + tok[7:], 1_000, secret, ErrBadSignature},
		{"no prefix", strings.TrimPrefix(tok, "qim1."), 1_000, secret, ErrMalformed},
		{"garbage", "qim1.", 1_000, secret, ErrMalformed},
		{"weak secret", tok, 1_000, []byte("short"), ErrWeakSecret},
	}
	for _, tc := range cases {
		if _, err := Verify(tc.key, tc.token, tc.now); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func flip(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}
