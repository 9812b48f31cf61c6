package svc

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services"
)

// composeFile is the part of compose.integration.yml the topology is judged on.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	EnvFile     []string          `yaml:"env_file"`
	Profiles    []string          `yaml:"profiles"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

const composeInstances = 2 // the deployment compose.integration.yml describes: --instances 2

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "compose.integration.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil { // yaml.v3 resolves the anchors and << merges
		t.Fatalf("compose.integration.yml: %v", err)
	}
	return f
}

// TestComposeDescribesTheHarnessTopology holds compose.integration.yml to ContainerDeployment(2),
// the containers StartContainers starts: the same services under the same names, each
// with exactly the deployment's variables, its own certificate's env file (and the token's for
// the gateways), the health check on its metrics port; and no other container of the image but
// the two one-shot set-up jobs.
func TestComposeDescribesTheHarnessTopology(t *testing.T) {
	f := loadCompose(t)
	if !strings.HasPrefix(f.Name, stack.ProjectPrefix) {
		t.Errorf("project name %q, want the harness's %s* project names", f.Name, stack.ProjectPrefix)
	}
	want := map[string]bool{"topics": true, "cql-migrate": true}
	for _, d := range ContainerDeployment(composeInstances, 64, true) {
		want[d.Name] = true
		s, ok := f.Services[d.Name]
		if !ok {
			t.Errorf("no service %s", d.Name)
			continue
		}
		if !maps.Equal(s.Environment, d.Env) {
			t.Errorf("%s environment\n got %v\nwant %v", d.Name, s.Environment, d.Env)
		}
		var files []string
		if d.Identity != "" {
			files = append(files, ".qim-compose/certs/"+d.Identity+".env")
		}
		if d.Token {
			files = append(files, ".qim-compose/token.env")
		}
		if !slices.Equal(s.EnvFile, files) {
			t.Errorf("%s env_file %v, want %v", d.Name, s.EnvFile, files)
		}
		checkQIMService(t, d.Name, d.Service, s)
	}
	for name, s := range f.Services {
		if strings.Contains(s.Image, "QIM_IMAGE") && !want[name] {
			t.Errorf("service %s runs the Q-IM image but is no container of ContainerDeployment(%d)", name, composeInstances)
		}
	}
	if !slices.Contains(f.Services["archiver"].Profiles, "cql") {
		t.Errorf("archiver profiles %v: it needs the CQL node of the cql profile", f.Services["archiver"].Profiles)
	}
}

// TestDeploymentIsTheHarnessTopology: every scaled service N times and one FanoutCoordinator,
// each reading only variables its program reads and every required one; the gateways'
// address lists in instance order, each MailboxNode and SessionProjection owning the shard
// range its place in those lists routes to it (contract.ShardCount.InstanceShards, as
// gates/svc gives processes), each gateway advertising its own Push address.
func TestDeploymentIsTheHarnessTopology(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		shards := contract.ShardCount(64)
		byName := map[string]DeployedService{}
		for _, d := range ContainerDeployment(n, shards, true) {
			byName[d.Name] = d
			s := composeService{Image: "${QIM_IMAGE:-qim-server:dev}", Command: []string{d.Service}, Environment: d.Env}
			if d.Identity != "" {
				s.EnvFile = append(s.EnvFile, "certs")
			}
			if d.Token {
				s.EnvFile = append(s.EnvFile, ".qim-compose/token.env")
			}
			s.Healthcheck.Test = []string{"CMD", "/qimctl", "healthz", "127.0.0.1:" + PortMetrics}
			checkQIMService(t, d.Name, d.Service, s)
		}
		if len(byName) != 5*n+3 {
			t.Errorf("n=%d: %d containers, want %d", n, len(byName), 5*n+3)
		}
		for _, svc := range []string{"writer", "mailbox", "session", "room"} {
			var addrs []string
			for k := 1; k <= n; k++ {
				name := fmt.Sprintf("%s-%d", svc, k)
				d := byName[name]
				addrs = append(addrs, name+":"+port(t, d.Env["QIM_"+strings.ToUpper(svc)+"_LISTEN"]))
				if owned := ownedVar(svc); owned != "" {
					if got, want := d.Env[owned], shards.InstanceShardSpec(k-1, n); got != want {
						t.Errorf("n=%d %s %s=%q, want %q (entry %d of the gateways' list)", n, name, owned, got, want, k)
					}
				}
			}
			for k := 1; k <= n; k++ {
				gw := byName[fmt.Sprintf("gateway-%d", k)]
				key := "QIM_" + strings.ToUpper(svc) + "_ADDRS"
				if got, want := gw.Env[key], strings.Join(addrs, ","); got != want {
					t.Errorf("n=%d gateway-%d %s=%q, want %q", n, k, key, got, want)
				}
			}
		}
		for k := 1; k <= n; k++ {
			name := fmt.Sprintf("gateway-%d", k)
			if got, want := byName[name].Env["QIM_GATEWAY_PUSH_ADVERTISE"], name+":"+PortGatewayPush; got != want {
				t.Errorf("%s advertises %q, want its own Push address %q", name, got, want)
			}
		}
	}
}

// checkQIMService: the Q-IM image running service, its variables all read by it and its
// required ones present (from its env files too), and its health check on its metrics port.
func checkQIMService(t *testing.T, name, service string, s composeService) {
	t.Helper()
	if !strings.Contains(s.Image, "QIM_IMAGE") || !slices.Equal(s.Command, []string{service}) {
		t.Errorf("%s: image %q command %v, want ${QIM_IMAGE…} running %q", name, s.Image, s.Command, service)
	}
	vars := services.Variables(service)
	reads := map[string]bool{}
	for _, v := range vars {
		reads[v.Name] = true
	}
	for k := range s.Environment {
		if !reads[k] {
			t.Errorf("%s sets %s, which qim %s does not read", name, k, service)
		}
	}
	fromFiles := map[string]bool{"QIM_TOKEN_SECRET": slices.Contains(s.EnvFile, ".qim-compose/token.env")}
	for _, v := range []string{"QIM_RPC_TLS_CA", "QIM_RPC_TLS_CERT", "QIM_RPC_TLS_KEY", "QIM_RPC_PEERS"} {
		fromFiles[v] = len(s.EnvFile) > 0 && reads[v]
	}
	for _, v := range vars {
		if v.Required && s.Environment[v.Name] == "" && !fromFiles[v.Name] {
			t.Errorf("%s lacks %s, which qim %s requires", name, v.Name, service)
		}
	}
	metrics := s.Environment["QIM_"+strings.ToUpper(service)+"_METRICS"]
	want := []string{"CMD", "/qimctl", "healthz", "127.0.0.1:" + port(t, metrics)}
	if !slices.Equal(s.Healthcheck.Test, want) {
		t.Errorf("%s health check %v, want %v", name, s.Healthcheck.Test, want)
	}
}

func ownedVar(service string) string {
	switch service {
	case "mailbox":
		return "QIM_MAILBOX_OWNED_SHARDS"
	case "session":
		return "QIM_SESSION_OWNED_SHARDS"
	}
	return ""
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("address %q: %v", addr, err)
	}
	return p
}
