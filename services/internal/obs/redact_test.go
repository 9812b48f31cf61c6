package obs

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSecretDigest(t *testing.T) {
	digestRe := regexp.MustCompile(`^blake3:[0-9a-f]{8}$`)
	tests := []struct {
		name   string
		secret string
	}{
		{"jwt-like token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2lnbmF0dXJl"},
		{"api key", "sk_live_0123456789abcdef"},
		{"short password", "hunter2!"},
		{"non-ascii", "пароль-密码"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SecretDigest(tc.secret)
			if !digestRe.MatchString(got) {
				t.Fatalf("SecretDigest(%q) = %q, want blake3:<8 hex>", tc.secret, got)
			}
			if again := SecretDigest(tc.secret); again != got {
				t.Fatalf("digest not stable: %q then %q", got, again)
			}
			if fromBytes := SecretDigest([]byte(tc.secret)); fromBytes != got {
				t.Fatalf("string and []byte digests differ: %q vs %q", got, fromBytes)
			}
			if strings.Contains(got, tc.secret) {
				t.Fatalf("digest %q contains the secret", got)
			}
		})
	}
}

// TestSecretDigestGolden pins the output: a changed digest breaks correlation with older logs,
// so it must be a deliberate, reviewed change (new context string), never an accident.
func TestSecretDigestGolden(t *testing.T) {
	tests := []struct{ secret, want string }{
		{"", "empty"},
		{"token-1", "blake3:63cd99e2"},
		{"sk_live_0123456789abcdef", "blake3:9d2b7be8"},
	}
	for _, tc := range tests {
		if got := SecretDigest(tc.secret); got != tc.want {
			t.Errorf("SecretDigest(%q) = %q, want %q", tc.secret, got, tc.want)
		}
	}
	if SecretDigest("token-1") == SecretDigest("token-2") {
		t.Fatal("distinct secrets share a digest")
	}
}

func TestBodyShape(t *testing.T) {
	tests := []struct {
		body []byte
		want string
	}{
		{nil, "bytes=0"},
		{[]byte("hello"), "bytes=5"},
		{bytes.Repeat([]byte{0xff}, 4096), "bytes=4096"},
	}
	for _, tc := range tests {
		if got := BodyShape(tc.body); got != tc.want {
			t.Errorf("BodyShape(%d bytes) = %q, want %q", len(tc.body), got, tc.want)
		}
	}
}

func TestTextShape(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", "runes=0 script=none"},
		{"hello world", "runes=11 script=latin"},
		{"Grüße", "runes=5 script=latin"},
		{"你好世界", "runes=4 script=cjk"},
		{"привет", "runes=6 script=cyrillic"},
		{"مرحبا", "runes=5 script=arabic"},
		{"hi привет", "runes=9 script=mixed"},
		{"12345 !?", "runes=8 script=none"},
		{"ሰላም", "runes=3 script=other"},
		{"a\xffb", "bytes=3 script=invalid-utf8"},
	}
	for _, tc := range tests {
		if got := TextShape(tc.text); got != tc.want {
			t.Errorf("TextShape(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestNeverContainsInput is the property the package exists for: over many random inputs of at
// least 4 bytes, no helper's output contains its input. The seed is fixed so a failure is
// reproducible rather than flaky.
func TestNeverContainsInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 1))
	helpers := []struct {
		name string
		fn   func([]byte) string
	}{
		{"SecretDigest", func(b []byte) string { return SecretDigest(b) }},
		{"BodyShape", BodyShape},
		{"TextShape", func(b []byte) string { return TextShape(string(b)) }},
	}
	for i := 0; i < 2000; i++ {
		input := randomInput(rng, 4+rng.IntN(60))
		for _, h := range helpers {
			out := h.fn(input)
			if bytes.Contains([]byte(out), input) {
				t.Fatalf("%s(%q) = %q contains its input", h.name, input, out)
			}
			if again := h.fn(input); again != out {
				t.Fatalf("%s(%q) not stable: %q then %q", h.name, input, out, again)
			}
		}
	}
}

// randomInput alternates raw bytes (tokens, keys) with valid UTF-8 text (message bodies).
func randomInput(rng *rand.Rand, n int) []byte {
	if rng.IntN(2) == 0 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	var sb strings.Builder
	for utf8.RuneCountInString(sb.String()) < n {
		sb.WriteRune(rune(0x20 + rng.IntN(0x3000)))
	}
	return []byte(sb.String())
}
