package services

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the Config structs")

// TestConfigDoc fails when docs/config.md is not what the Config structs say.
func TestConfigDoc(t *testing.T) {
	path := filepath.Join("..", "docs", "config.md")
	want := ConfigDoc()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with go test ./services -run TestConfigDoc -update)", err)
	}
	if string(got) != want {
		t.Fatalf("docs/config.md is stale: go test ./services -run TestConfigDoc -update")
	}
}

// TestHelpListsEveryVariable: `qim <service> --help` lists every variable of the service with
// its default (or "required").
func TestHelpListsEveryVariable(t *testing.T) {
	root := NewCommand()
	for _, p := range programs() {
		cmd, _, err := root.Find([]string{p.name})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.vars) < 4 {
			t.Errorf("%s lists only %d variables", p.name, len(p.vars))
		}
		for _, v := range p.vars {
			if !strings.Contains(cmd.Long, v.Name+"  (") {
				t.Errorf("qim %s --help lacks %s", p.name, v.Name)
			}
			if !v.Required && v.Default != "" && !strings.Contains(cmd.Long, "default "+v.Default) {
				t.Errorf("qim %s --help lacks the default of %s (%s)", p.name, v.Name, v.Default)
			}
		}
	}
}

// TestMalformedValueFailsStartupNamingTheVariable: every number, duration and bool of every
// service refuses "garbage" before anything is contacted, with the variable's name.
func TestMalformedValueFailsStartupNamingTheVariable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing may be reached anyway; a refusal must come from the configuration
	for _, p := range programs() {
		for _, v := range p.vars {
			switch v.Type {
			case "int", "uint", "duration", "bool", "float":
			default:
				continue
			}
			t.Run(p.name+"/"+v.Name, func(t *testing.T) {
				t.Setenv(v.Name, "garbage")
				root := NewCommand()
				root.SetArgs([]string{p.name})
				root.SetOut(&strings.Builder{})
				root.SetErr(&strings.Builder{})
				err := root.ExecuteContext(ctx)
				if err == nil || !strings.Contains(err.Error(), v.Name) {
					t.Fatalf("qim %s with %s=garbage: %v", p.name, v.Name, err)
				}
			})
		}
	}
}

// TestUnknownVariableRefused: a misspelt variable refuses every command, naming it and the
// nearest known name; a retired one names its replacement.
func TestUnknownVariableRefused(t *testing.T) {
	t.Setenv("QIM_WRITER_BACH_MAX", "64")
	t.Setenv("QIM_HEARTBEAT_MS", "1000")
	for _, name := range []string{"writer", "gateway", "all"} {
		root := NewCommand()
		root.SetArgs([]string{name})
		root.SetOut(&strings.Builder{})
		root.SetErr(&strings.Builder{})
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), "QIM_WRITER_BACH_MAX (did you mean QIM_WRITER_BATCH_MAX?)") ||
			!strings.Contains(err.Error(), "QIM_HEARTBEAT_INTERVAL") {
			t.Fatalf("qim %s: %v", name, err)
		}
	}
}

// Each service takes the credentials of exactly the stores it reaches: a variable a service
// does not read is refused there, so nobody believes a connection is authenticated when it is not.
func TestStoreCredentialsPerService(t *testing.T) {
	for _, c := range []struct {
		program string
		takes   []string
		refuses []string
	}{
		{"gateway", []string{"QIM_REDIS_PASSWORD", "QIM_KAFKA_SASL_MECHANISM"}, []string{"QIM_CQL_TLS_CA"}},
		{"fanout", []string{"QIM_KAFKA_TLS_CA"}, []string{"QIM_REDIS_USERNAME", "QIM_CQL_USERNAME"}},
		{"writer", []string{"QIM_REDIS_TLS_CA", "QIM_KAFKA_PASSWORD", "QIM_CQL_PASSWORD"}, nil},
		{"archiver", []string{"QIM_REDIS_USERNAME", "QIM_KAFKA_USERNAME", "QIM_CQL_TLS_CA"}, nil},
	} {
		vars := map[string]bool{}
		for _, v := range Variables(c.program) {
			vars[v.Name] = true
		}
		for _, v := range c.takes {
			if !vars[v] {
				t.Errorf("%s does not read %s", c.program, v)
			}
		}
		for _, v := range c.refuses {
			if vars[v] {
				t.Errorf("%s reads %s, a store it never reaches", c.program, v)
			}
		}
	}
}
