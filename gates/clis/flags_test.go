package clis

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// flagUse is one flag of one command, as its --help shows it.
type flagUse struct {
	command    string // "qimctl audit archive"
	name       string
	takesValue bool
	usage      string
}

var (
	commandLine = regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s{2,}`)
	flagLine    = regexp.MustCompile(`^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)(?: ([A-Za-z0-9]+))?\s{2,}(.*)$`)
)

// flagsOf walks bin's command tree through --help and lists every flag of every command.
func flagsOf(t *testing.T, bin string, path ...string) []flagUse {
	t.Helper()
	out, err := exec.Command(bin, append(append([]string(nil), path...), "--help")...).Output()
	if err != nil {
		t.Fatalf("%s %v --help: %v", filepath.Base(bin), path, err)
	}
	command := strings.Join(append([]string{filepath.Base(bin)}, path...), " ")
	var uses []flagUse
	var subs []string
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			section = line
		case section == "Available Commands:":
			if m := commandLine.FindStringSubmatch(line); m != nil && m[1] != "help" && m[1] != "completion" {
				subs = append(subs, m[1])
			}
		case section == "Flags:" || section == "Global Flags:":
			if m := flagLine.FindStringSubmatch(line); m != nil {
				uses = append(uses, flagUse{command: command, name: m[1], takesValue: m[2] != "", usage: m[3]})
			}
		}
	}
	for _, s := range subs {
		uses = append(uses, flagsOf(t, bin, append(append([]string(nil), path...), s)...)...)
	}
	return uses
}

// meanings are the flag names several binaries share and what each must mean everywhere: whether
// it takes a value, and words its help must contain. --json is a switch that prints JSON to
// stdout; a file is --json-out.
var meanings = map[string]struct {
	takesValue bool
	says       string
}{
	"json":          {false, "JSON"},
	"json-out":      {true, "JSON"},
	"html-out":      {true, "HTML"},
	"root":          {true, "repository root"},
	"out":           {true, "directory"},
	"report-dir":    {true, "report directory"},
	"brokers":       {true, "QIM_KAFKA_BROKERS"},
	"redis":         {true, "QIM_REDIS_ADDR"},
	"mailbox-redis": {true, "QIM_MAILBOX_REDIS_ADDR"},
	"cql-hosts":     {true, "QIM_CQL_HOSTS"},
	"secret-file":   {true, "QIM_TOKEN_SECRET"},
	"timeout":       {true, ""},
	"tenant":        {true, "tenant"},
}

// One name per thing across every binary: a flag several commands share has one meaning, the
// tools name an address flag after the variable the services read, and no flag takes a secret as
// its value (a command line is visible in ps): secrets come from a file or the environment.
func TestSharedFlagNames(t *testing.T) {
	dir := built(t)
	seen := map[string]flagUse{}
	for _, b := range binaries {
		for _, f := range flagsOf(t, filepath.Join(dir, b)) {
			if m, ok := meanings[f.name]; ok && (m.takesValue != f.takesValue || !strings.Contains(f.usage, m.says)) {
				t.Errorf("%s --%s (value %v): %q; --%s must take a value: %v and say %q", f.command, f.name,
					f.takesValue, f.usage, f.name, m.takesValue, m.says)
			}
			if first, ok := seen[f.name]; ok && first.takesValue != f.takesValue {
				t.Errorf("--%s takes a value in %s but not in %s, or the other way round", f.name, first.command, f.command)
			}
			seen[f.name] = f
			secretish := strings.Contains(f.name, "secret") || strings.Contains(f.name, "password") || strings.Contains(f.name, "token")
			if secretish && f.takesValue && !strings.HasSuffix(f.name, "-file") {
				t.Errorf("%s --%s takes a secret as its value: read it from a file (--…-file) or the environment", f.command, f.name)
			}
		}
	}
	for name := range meanings {
		if _, ok := seen[name]; !ok {
			t.Errorf("no binary has --%s any more: drop it from meanings", name)
		}
	}
}
