package config

import (
	"fmt"
	"log/slog"

	"github.com/qim-dev/qim/services/internal/obs"
)

// Secret is a secret configuration value (a token-signing key). Every way of printing it (fmt
// verbs, slog, %#v) yields its obs.SecretDigest, so a Config dumped into a log or an error
// message cannot leak the key that mints every user's credentials.
type Secret []byte

// String returns the digest, never the bytes.
func (s Secret) String() string { return obs.SecretDigest(s) }

// GoString keeps %#v redacted too.
func (s Secret) GoString() string { return "config.Secret(" + obs.SecretDigest(s) + ")" }

// Format makes every fmt verb (%x and %q included) print the digest.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(obs.SecretDigest(s))) }

// LogValue redacts the secret in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(obs.SecretDigest(s)) }

// UnmarshalText lets the loader read a secret variable straight into a Secret, so the raw
// bytes never sit in a plain string field that a %+v of the Config would print. The value is
// taken byte for byte (no trimming: a secret may hold any byte); an empty value stays unset, and
// Validate reports it as required.
func (s *Secret) UnmarshalText(b []byte) error {
	*s = append(Secret(nil), b...)
	return nil
}
