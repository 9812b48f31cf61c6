package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type withPassword struct {
	User     string `env:"QIM_T_USER" doc:"user"`
	Password Secret `env:"QIM_T_PASSWORD" secret:"true" doc:"password"`
}

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// QIM_X_FILE reads a secret from a file: one trailing newline (LF or CRLF) is dropped, nothing
// else; setting both variables, an unreadable file and an empty one are errors naming _FILE.
func TestSecretFromFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     Lookup
		want    string
		wantErr error
	}{
		{"file", env("QIM_T_PASSWORD_FILE", writeSecret(t, "s3cret-from-file")), "s3cret-from-file", nil},
		{"one trailing newline dropped", env("QIM_T_PASSWORD_FILE", writeSecret(t, " pw \n\n")), " pw \n", nil},
		{"CRLF dropped", env("QIM_T_PASSWORD_FILE", writeSecret(t, "pw\r\n")), "pw", nil},
		{"variable", env("QIM_T_PASSWORD", "s3cret-direct"), "s3cret-direct", nil},
		{"empty _FILE is unset", env("QIM_T_PASSWORD_FILE", "", "QIM_T_PASSWORD", "direct"), "direct", nil},
		{"both", env("QIM_T_PASSWORD_FILE", writeSecret(t, "a"), "QIM_T_PASSWORD", "s3cret-direct"), "", ErrConflict},
		{"missing file", env("QIM_T_PASSWORD_FILE", "/nonexistent/pw"), "", ErrMalformed},
		{"empty file", env("QIM_T_PASSWORD_FILE", writeSecret(t, "\n")), "", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(withPassword{}, tc.env)
			var ce *Error
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.wantErr != nil && (!errors.As(err, &ce) || ce.Var != "QIM_T_PASSWORD_FILE" || !errors.Is(err, tc.wantErr)):
				t.Fatalf("Load error %v, want %v naming QIM_T_PASSWORD_FILE", err, tc.wantErr)
			case tc.wantErr != nil && strings.Contains(err.Error(), "s3cret"):
				t.Fatalf("error %q shows the secret", err)
			case string(c.Password) != tc.want:
				t.Fatalf("Password = %q, want %q", []byte(c.Password), tc.want)
			}
		})
	}
}

// Every secret gets its _FILE companion in --help and docs/config.md, and a field that repeats a
// companion's name is a declaration error.
func TestSecretFileIsDescribed(t *testing.T) {
	vars, err := Describe(withPassword{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 3 || vars[2].Name != "QIM_T_PASSWORD_FILE" || vars[2].Type != "file" || vars[2].Secret {
		t.Fatalf("Describe = %+v", vars)
	}
	type clash struct {
		P Secret `env:"QIM_T_P" secret:"true" doc:"p"`
		F string `env:"QIM_T_P_FILE" doc:"f"`
	}
	if _, err := Describe(clash{}); err == nil {
		t.Fatal("a field named like a secret's _FILE companion was accepted")
	}
}
