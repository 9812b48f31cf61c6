package admin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// The admin certificate is taken with QIM_WRITER_ADDRS, QIM_ROOM_ADDRS or both, is required by
// either, and is refused without them; the errors name the variables to set.
func TestConfigRPCCertificate(t *testing.T) {
	dir := t.TempDir()
	certs, err := rpcauth.WriteDevSet(filepath.Join(dir, "certs"), rpcauth.DevIdentities(1))
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"id":"ops","sha256":"`+KeyDigest(opsKey)+`","scopes":["rooms"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := certs.Certs["admin"]
	withCert := func(c *Config) { c.RPCCAFile, c.RPCCertFile, c.RPCKeyFile = certs.CA, admin.CertFile, admin.KeyFile }
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // "" accepts
	}{
		{"rooms only", func(c *Config) { c.RoomAddrs = []string{"10.0.0.5:7500"}; withCert(c) }, ""},
		{"writers and rooms", func(c *Config) {
			c.WriterAddrs, c.RoomAddrs = []string{"10.0.0.4:7100"}, []string{"10.0.0.5:7500"}
			withCert(c)
		}, ""},
		{"rooms without the certificate", func(c *Config) { c.RoomAddrs = []string{"10.0.0.5:7500"} }, "QIM_ROOM_ADDRS: the admin certificate is needed"},
		{"both without the certificate", func(c *Config) { c.WriterAddrs, c.RoomAddrs = []string{"10.0.0.4:7100"}, []string{"10.0.0.5:7500"} },
			"QIM_WRITER_ADDRS and QIM_ROOM_ADDRS: the admin certificate is needed"},
		{"the certificate alone", withCert, "without QIM_WRITER_ADDRS or QIM_ROOM_ADDRS"},
		{"a bad room address", func(c *Config) { c.RoomAddrs = []string{"room-1"}; withCert(c) }, `QIM_ROOM_ADDRS lists "room-1"`},
	} {
		cfg := Config{KeysFile: keys, RedisAddr: "127.0.0.1:6379"}
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && (err != nil || cfg.rpc == nil):
			t.Errorf("%s: %v, want the certificate loaded", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
