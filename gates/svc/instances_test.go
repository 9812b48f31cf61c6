package svc_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/services"
)

func TestServiceOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		service string
		k       int
	}{
		{"writer", "writer", 1},
		{"writer-2", "writer", 2},
		{"mailbox-12", "mailbox", 12},
		{"session-3", "session", 3},
		{"gateway", "gateway", 1},
		{"gateway-2", "gateway", 2},
		{"fanout-2", "fanout-2", 1}, // one FanoutCoordinator: not an instance name
		{"writer-1", "writer-1", 1}, // instance 1 is the service's own name
		{"writer-x", "writer-x", 1},
		{"all", "all", 1},
	} {
		service, k := svc.ServiceOf(tc.name)
		if service != tc.service || k != tc.k {
			t.Errorf("ServiceOf(%q) = %q, %d; want %q, %d", tc.name, service, k, tc.service, tc.k)
		}
		if tc.k > 1 && svc.InstanceName(service, k) != tc.name {
			t.Errorf("InstanceName(%q, %d) = %q", service, k, svc.InstanceName(service, k))
		}
	}
}

// fakeBinary is a qim stand-in whose --help lists the variables a current binary reads (the
// harness probes for them) and that otherwise does nothing.
func fakeBinary(t *testing.T, help string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fake-qim")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho '"+help+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s set twice", k)
		}
		m[k] = v
	}
	return m
}

// A deployment of two instances: each process listens on its own ports with its own
// certificate, and entry i of the gateway's address lists is the node that owns the shards the
// gateway routes to entry i. Misordered lists would route users to nodes that refuse them.
func TestInstancesDeploymentWiring(t *testing.T) {
	const shards = 64
	bin := fakeBinary(t, "QIM_WRITER_ADDRS QIM_RPC_TLS_CA QIM_GATEWAY_PUSH_ADVERTISE")
	set, err := svc.NewInstances(bin, stack.Endpoints{Dir: t.TempDir(), DispatchShards: shards}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"writer", "writer-2", "mailbox", "mailbox-2", "fanout", "session", "session-2", "gateway", "gateway-2"}
	if got := set.Services(); !slices.Equal(got, want) {
		t.Fatalf("Services() = %v, want %v", got, want)
	}
	gw := envMap(t, set.Env(svc.Gateway))
	ports, certs := map[string]string{}, map[string]string{}
	for _, name := range set.Services() {
		env := envMap(t, set.Env(name))
		service, k := svc.ServiceOf(name)
		listen, metrics := env["QIM_"+strings.ToUpper(service)+"_LISTEN"], env["QIM_"+strings.ToUpper(service)+"_METRICS"]
		own := []string{listen, metrics}
		if service == svc.Gateway {
			own = append(own, env["QIM_GATEWAY_WS_LISTEN"], env["QIM_GATEWAY_PUSH_LISTEN"])
			if listen != set.Addrs.TCP[name] || env["QIM_GATEWAY_PUSH_LISTEN"] != set.Addrs.RPC[name] {
				t.Errorf("%s listens on %s and %s; Addrs say %s and %s", name, listen, env["QIM_GATEWAY_PUSH_LISTEN"],
					set.Addrs.TCP[name], set.Addrs.RPC[name])
			}
		}
		if p, set := env["QIM_GATEWAY_PUSH_ADDR"]; set {
			t.Errorf("%s is told QIM_GATEWAY_PUSH_ADDR=%s: with several gateways pushes go by qim.presence", name, p)
		}
		for _, a := range own {
			if prev, dup := ports[a]; dup && a != "" {
				t.Errorf("%s and %s share %s", prev, name, a)
			}
			ports[a] = name
		}
		if metrics != set.Addrs.Metrics[name] {
			t.Errorf("%s: metrics %q, Addrs.Metrics %q", name, metrics, set.Addrs.Metrics[name])
		}
		if cert := env["QIM_RPC_TLS_CERT"]; cert != "" {
			if prev, dup := certs[cert]; dup {
				t.Errorf("%s and %s share the certificate %s", prev, name, cert)
			}
			certs[cert] = name
		} else if service != svc.Fanout {
			t.Errorf("%s has no certificate", name)
		}
		if service != svc.Mailbox && service != svc.Session {
			continue
		}
		list := strings.Split(gw["QIM_"+strings.ToUpper(service)+"_ADDRS"], ",")
		if len(list) != 2 || list[k-1] != listen {
			t.Errorf("%s listens on %s; the gateway's list %v has it elsewhere than entry %d", name, listen, list, k-1)
		}
		if owned, want := env["QIM_"+strings.ToUpper(service)+"_OWNED_SHARDS"], contract.ShardCount(shards).InstanceShardSpec(k-1, 2); owned != want {
			t.Errorf("%s owns %q, the gateway routes it %q", name, owned, want)
		}
	}
	if writers := strings.Split(gw["QIM_WRITER_ADDRS"], ","); !slices.Equal(writers, []string{set.Addrs.RPC["writer"], set.Addrs.RPC["writer-2"]}) {
		t.Errorf("QIM_WRITER_ADDRS = %v", writers)
	}
}

func TestInstancesRefused(t *testing.T) {
	current := fakeBinary(t, "QIM_WRITER_ADDRS QIM_GATEWAY_PUSH_ADVERTISE")
	for _, tc := range []struct {
		what   string
		bin    string
		n      int
		shards int
	}{
		{"zero instances", current, 0, 64},
		{"more instances than shards", current, 5, 4},
		{"a binary from before several instances", fakeBinary(t, "QIM_WRITER_LISTEN"), 2, 64},
		{"a binary from before several gateways", fakeBinary(t, "QIM_WRITER_ADDRS"), 2, 64},
	} {
		_, err := svc.NewInstances(tc.bin, stack.Endpoints{Dir: t.TempDir(), DispatchShards: tc.shards}, tc.n)
		if !errors.Is(err, svc.ErrInstances) {
			t.Errorf("%s: %v, want ErrInstances", tc.what, err)
		}
	}
}

// RPCMode reads the mode of the process's last start: a restart in plaintext after an mTLS
// start must not read as mTLS.
func TestRPCModeIsTheLastStartsMode(t *testing.T) {
	dir := t.TempDir()
	set, err := svc.New("qim", stack.Endpoints{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.RPCMode(svc.Writer); got != "" {
		t.Errorf("no log: %q", got)
	}
	log := `{"msg":"writer: serving","rpc":"mtls"}` + "\n" + `{"msg":"writer: serving","rpc":"plaintext"}` + "\n"
	if err := os.WriteFile(set.LogPath(svc.Writer), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := set.RPCMode(svc.Writer); got != "plaintext" {
		t.Errorf("RPCMode = %q, want the last start's plaintext", got)
	}
}

// The process deployment is Deployment rendered on loopback ports: every process gets exactly
// its entry (plus the token secret where its program reads it and its certificate set), so it
// sets only variables its program reads and every one its program requires; with a CQL node the
// writers and SessionProjections read the archive too (tiered history) and the HistoryArchiver
// runs.
func TestProcessEnvIsTheDeployment(t *testing.T) {
	bin := fakeBinary(t, "QIM_WRITER_ADDRS QIM_RPC_TLS_CA QIM_GATEWAY_PUSH_ADVERTISE")
	for _, n := range []int{1, 2} {
		ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 64, RedisCore: "127.0.0.1:1", RedisMailbox: "127.0.0.1:2",
			KafkaBrokers: []string{"127.0.0.1:3"}, CQL: "127.0.0.1:4"}
		set, err := svc.NewInstances(bin, ep, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(set.Services(), svc.Archiver) {
			service, _ := svc.ServiceOf(name)
			env := envMap(t, set.Env(name))
			reads := map[string]bool{}
			for _, v := range services.Variables(service) {
				reads[v.Name] = true
				if v.Required && env[v.Name] == "" {
					t.Errorf("n=%d %s lacks %s, which qim %s requires", n, name, v.Name, service)
				}
			}
			for k := range env {
				if !reads[k] {
					t.Errorf("n=%d %s gets %s, which qim %s does not read", n, name, k, service)
				}
			}
			if tiered := service == svc.Writer || service == svc.Session; tiered && env["QIM_CQL_HOSTS"] != ep.CQL {
				t.Errorf("n=%d %s: QIM_CQL_HOSTS=%q, want the stack's CQL node", n, name, env["QIM_CQL_HOSTS"])
			}
		}
		// qim all has one certificate set of its own.
		certVars := map[string]bool{"QIM_RPC_TLS_CA": true, "QIM_RPC_TLS_CERT": true, "QIM_RPC_TLS_KEY": true, "QIM_RPC_PEERS": true}
		all := envMap(t, set.Env(svc.OneProcessName))
		for _, name := range svc.Order {
			if !slices.Contains(set.Services(), name) {
				continue // a service this binary does not run is not in its qim all either
			}
			for k, v := range envMap(t, set.Env(name)) {
				if all[k] != v && !certVars[k] {
					t.Errorf("n=%d qim all: %s=%q, %s has %q", n, k, all[k], name, v)
				}
			}
		}
	}
}
