package cli

import (
	"strings"
	"testing"

	"github.com/qim-dev/qim/loadgen"
)

func TestParsePids(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []loadgen.Proc
		wantErr bool
	}{
		{nil, nil, false},
		{[]string{"gateway=42", "redis-core=7"}, []loadgen.Proc{{Name: "gateway", Pid: 42}, {Name: "redis-core", Pid: 7}}, false},
		{[]string{"gateway"}, nil, true},
		{[]string{"=42"}, nil, true},
		{[]string{"kafka=0"}, nil, true},
		{[]string{"kafka=x"}, nil, true},
	} {
		got, err := parsePids(tc.in)
		if (err != nil) != tc.wantErr || len(got) != len(tc.want) {
			t.Errorf("parsePids(%v) = %v, %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parsePids(%v)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

// Without a signing secret the command refuses to start instead of failing every AUTH.
func TestRequiresSecret(t *testing.T) {
	t.Setenv("QIM_TOKEN_SECRET", "")
	cmd := NewRootCmd()
	cmd.SetArgs([]string{"--gateway", "127.0.0.1:1", "--duration", "1s"})
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v", err)
	}
}

// --sdk-clients > 0 wires the real SDK lane (a nil lane would fail the "sdk lane" check as not
// available); 0 leaves it out.
func TestSDKLaneWiring(t *testing.T) {
	o := &options{sdkClients: 5, sdkDataDir: t.TempDir()}
	l, err := o.lane()
	if err != nil || l == nil {
		t.Fatalf("lane() = %v, %v", l, err)
	}
	o.sdkClients = 0
	if l, err := o.lane(); err != nil || l != nil {
		t.Fatalf("disabled lane() = %v, %v", l, err)
	}
}

// Group mode: the SDK lane is off unless asked for (then refused: it drives 1:1 pairs), and a
// group larger than the connections is refused before anything is dialled.
func TestGroupModeFlags(t *testing.T) {
	t.Setenv("QIM_TOKEN_SECRET", strings.Repeat("s", 32))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "group", "--group-size", "10", "--sdk-clients", "5"}, "SDK lane drives 1:1 pairs"},
		{[]string{"--mode", "group", "--group-size", "500", "--connections", "400"}, "400 connections cannot hold a group of 500"},
		{[]string{"--mode", "group", "--group-size", "1001", "--connections", "2000"}, "group size 1001 not in [1, 1000]"},
		{[]string{"--mode", "groups"}, `mode "groups"`},
		{[]string{"--group-size", "10"}, "group size 10 in direct mode"},
		// Valid: the run starts and fails to dial the closed port, not on its config.
		{[]string{"--mode", "group", "--group-size", "10"}, "dial 127.0.0.1:1"},
	} {
		cmd := NewRootCmd()
		cmd.SetArgs(append([]string{"--gateway", "127.0.0.1:1", "--duration", "1s"}, tc.args...))
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
