package svc_test

import (
	"strings"
	"testing"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// TestRerouteReplacesOneProcessVariable: a route replaces the variable of the one process it
// names (no second entry for exec to pick between), and no other process sees it.
func TestRerouteReplacesOneProcessVariable(t *testing.T) {
	bin := fakeBinary(t, "QIM_WRITER_ADDRS QIM_RPC_TLS_CA QIM_GATEWAY_PUSH_ADVERTISE")
	ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 64, RedisCore: "127.0.0.1:1", RedisMailbox: "127.0.0.1:2",
		KafkaBrokers: []string{"127.0.0.1:3"}}
	set, err := svc.NewInstances(bin, ep, 2)
	if err != nil {
		t.Fatal(err)
	}
	writer2 := svc.InstanceName(svc.Writer, 2)
	set.Reroute(writer2, "QIM_REDIS_ADDR", "127.0.0.1:9")
	n := 0
	for _, kv := range set.Env(writer2) {
		if strings.HasPrefix(kv, "QIM_REDIS_ADDR=") {
			n++
		}
	}
	if got := envMap(t, set.Env(writer2))["QIM_REDIS_ADDR"]; got != "127.0.0.1:9" || n != 1 {
		t.Errorf("%s: QIM_REDIS_ADDR=%q in %d entries, want the route in one", writer2, got, n)
	}
	for _, name := range []string{svc.Writer, svc.Gateway, svc.Session} {
		if got := envMap(t, set.Env(name))["QIM_REDIS_ADDR"]; got != ep.RedisCore {
			t.Errorf("%s: QIM_REDIS_ADDR=%q, want the stack's %s", name, got, ep.RedisCore)
		}
	}
}
