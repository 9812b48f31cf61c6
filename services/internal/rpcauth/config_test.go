package rpcauth

import (
	"errors"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func TestValidate(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	full := Config{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "c.key", Peers: []string{"gateway:" + fp}}
	remote := Addr{Var: "QIM_WRITER_ADDRS", Addr: "10.0.0.7:7101"}
	local := Addr{Var: "QIM_WRITER_ADDRS", Addr: "127.0.0.1:7101"}
	with := func(f func(*Config)) Config { c := full; f(&c); return c }
	cases := []struct {
		name    string
		cfg     Config
		addrs   []Addr
		wantErr string // "" = valid
	}{
		{"neither mode", Config{}, []Addr{local}, "internal gRPC needs mTLS"},
		{"plaintext on loopback", Config{PlaintextLoopback: true}, []Addr{local, {Var: "X", Addr: "localhost:1"}}, ""},
		{"plaintext beyond loopback", Config{PlaintextLoopback: true}, []Addr{local, remote}, "QIM_WRITER_ADDRS=\"10.0.0.7:7101\" is not loopback"},
		{"plaintext with a whitelist", Config{PlaintextLoopback: true, Peers: full.Peers}, nil, "QIM_RPC_PEERS is set"},
		{"mTLS beyond loopback", full, []Addr{remote}, ""},
		{"mTLS and plaintext", with(func(c *Config) { c.PlaintextLoopback = true }), nil, "choose one"},
		{"no key", with(func(c *Config) { c.KeyFile = "" }), nil, "QIM_RPC_TLS_KEY not set"},
		{"no CA nor cert", with(func(c *Config) { c.CAFile, c.CertFile = "", "" }), nil, "QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT not set"},
		{"no peers", with(func(c *Config) { c.Peers = nil }), nil, "QIM_RPC_PEERS is empty"},
		{"unknown role", with(func(c *Config) { c.Peers = []string{"writer:" + fp} }), nil, "role one of"},
		{"short fingerprint", with(func(c *Config) { c.Peers = []string{"admin:abcd"} }), nil, "64 hex digits"},
		{"sha256: prefix", with(func(c *Config) { c.Peers = []string{"admin:sha256:" + fp} }), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate(tc.addrs...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("valid config refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrConfig)):
				t.Fatalf("got %v, want ErrConfig containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestLoadRefuses: the start fails on a certificate that would fail every handshake later.
func TestLoadRefuses(t *testing.T) {
	set, cfg := writeTestSet(t)
	other, _ := writeTestSet(t)
	cases := []struct {
		name   string
		cfg    Config
		serves string
		want   string
	}{
		{"served under another service's name", cfg, contract.RPCServiceMailbox, "no DNS SAN mailbox.qim.internal"},
		{"client-only certificate served", Config{CAFile: set.CA, CertFile: set.Certs["admin"].CertFile,
			KeyFile: set.Certs["admin"].KeyFile, Peers: cfg.Peers}, contract.RPCServiceWriter, "no DNS SAN writer.qim.internal"},
		{"certificate of another CA", Config{CAFile: set.CA, CertFile: other.Certs["server"].CertFile,
			KeyFile: other.Certs["server"].KeyFile, Peers: cfg.Peers}, contract.RPCServiceWriter, "does not verify against QIM_RPC_TLS_CA"},
		{"key of another certificate", Config{CAFile: set.CA, CertFile: set.Certs["server"].CertFile,
			KeyFile: set.Certs["gateway"].KeyFile, Peers: cfg.Peers}, contract.RPCServiceWriter, "QIM_RPC_TLS_CERT/QIM_RPC_TLS_KEY"},
		{"missing CA file", Config{CAFile: set.Dir + "/nope.pem", CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, Peers: cfg.Peers}, "", "QIM_RPC_TLS_CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.Load(tc.serves)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := cfg.Load(contract.RPCServiceWriter); err != nil {
		t.Fatalf("the writer's own certificate: %v", err)
	}
}

// TestDevSetWhitelist: the set's whitelist lists each role holder once and nothing else.
func TestDevSetWhitelist(t *testing.T) {
	set, err := WriteDevSet(t.TempDir(), DevIdentities(2))
	if err != nil {
		t.Fatal(err)
	}
	peers, err := parsePeers(set.Peers)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]contract.RPCRole{"gateway-1": contract.RPCRoleGateway, "gateway-2": contract.RPCRoleGateway,
		"mailbox-1": contract.RPCRoleMailbox, "mailbox-2": contract.RPCRoleMailbox, "admin": contract.RPCRoleAdmin,
		"notify": contract.RPCRoleNotify}
	if len(peers) != len(want) {
		t.Fatalf("whitelist has %d fingerprints, want %d: %v", len(peers), len(want), set.Peers)
	}
	for name, role := range want {
		if rs := peers[set.Certs[name].Fingerprint]; !rs.has(role) || len(rs.names()) != 1 {
			t.Errorf("%s is listed as %v, want only %s", name, rs.names(), role)
		}
	}
	for _, name := range []string{"writer-1", "session-2"} {
		if _, listed := peers[set.Certs[name].Fingerprint]; listed {
			t.Errorf("%s holds a role; it calls no internal RPC", name)
		}
	}
}

func TestEnvAtNamesTheMountPoint(t *testing.T) {
	set, err := WriteDevSet(t.TempDir(), DevIdentities(2))
	if err != nil {
		t.Fatal(err)
	}
	got := set.EnvAt("writer-2", "/certs")
	want := []string{"QIM_RPC_TLS_CA=/certs/ca.pem", "QIM_RPC_TLS_CERT=/certs/writer-2.pem", "QIM_RPC_TLS_KEY=/certs/writer-2.key",
		"QIM_RPC_PEERS=" + strings.Join(set.Peers, ",")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("EnvAt = %v, want %v", got, want)
	}
	c := set.Certs["writer-2"]
	inDir := []string{"QIM_RPC_TLS_CA=" + set.CA, "QIM_RPC_TLS_CERT=" + c.CertFile, "QIM_RPC_TLS_KEY=" + c.KeyFile,
		"QIM_RPC_PEERS=" + strings.Join(set.Peers, ",")}
	if got := set.EnvAt("writer-2", ""); strings.Join(got, " ") != strings.Join(inDir, " ") {
		t.Errorf("no mount changed the env: %v", got)
	}
}
