package devtoken

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// SecretEnv is the variable every program that signs or verifies dev tokens reads the secret from.
const SecretEnv = "QIM_TOKEN_SECRET"

// ErrNoSecret: neither a secret file nor SecretEnv was given.
var ErrNoSecret = errors.New("no token signing secret: set " + SecretEnv + " or pass --secret-file")

// ReadSecret is how the tools (qimctl, qim-loadgen) take the signing secret: from the file at path
// when path is set (trailing newlines trimmed, as an editor or `echo` leaves them), else from
// SecretEnv via getenv. Never from a flag's value: a command line is visible to every user of
// the machine in ps.
func ReadSecret(path string, getenv func(string) string) ([]byte, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read secret file: %w", err)
		}
		return bytes.TrimRight(b, "\r\n"), nil
	}
	if s := getenv(SecretEnv); s != "" {
		return []byte(s), nil
	}
	return nil, ErrNoSecret
}
