package cli

import (
	"testing"

	"github.com/qim-dev/qim/loadgen"
)

func TestParseSkips(t *testing.T) {
	got, err := parseSkips([]string{"redis-artifacts: hot history is not bounded yet"})
	if err != nil || got["redis-artifacts"] != "hot history is not bounded yet" || len(got) != 1 {
		t.Fatalf("parseSkips = %v, %v", got, err)
	}
	for _, bad := range []string{"redis-artifacts", "redis-artifacts:", "no-such-gate:because"} {
		if _, err := parseSkips([]string{bad}); err == nil {
			t.Errorf("--skip %q accepted", bad)
		}
	}
}

// --mode group turns the SDK lane's CLI default (5 %) off; an explicit --sdk-clients stays, for
// the gate to refuse with its reason. An unknown mode is refused at once.
func TestPerfModeFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mode    loadgen.Mode
		sdk     int
		wantErr bool
	}{
		{nil, loadgen.ModeDirect, 5, false},
		{[]string{"--mode", "group", "--group-size", "10"}, loadgen.ModeGroup, 0, false},
		{[]string{"--mode", "group", "--sdk-clients", "5"}, loadgen.ModeGroup, 5, false},
		{[]string{"--mode", "rooms"}, "", 0, true},
	} {
		o := &runOptions{}
		cmd := newRunCmd(o)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.perfModeOf(cmd)
		if (err != nil) != tc.wantErr || (err == nil && (o.perf.Mode != tc.mode || o.perf.SDKClients != tc.sdk)) {
			t.Errorf("%v: mode %q sdk %d err %v", tc.args, o.perf.Mode, o.perf.SDKClients, err)
		}
	}
}

// --full runs with a CQL node unless --with-cql=false says otherwise; named gates do only with
// --with-cql.
func TestFullImpliesCQL(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--full"}, true},
		{[]string{"--full", "--with-cql=false"}, false},
		{nil, false},
		{[]string{"--with-cql"}, true},
	} {
		o := &runOptions{}
		cmd := newRunCmd(o)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.cqlOf(cmd); o.withCQL != tc.want {
			t.Errorf("%v: with CQL %v, want %v", tc.args, o.withCQL, tc.want)
		}
	}
}

// --one-process is for the perf gate alone: gates that stop or kill one service would end all
// five, and one Go runtime runs one CPU profile at a time.
func TestOneProcessOnlyForPerf(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"perf", "--one-process"}, false},
		{[]string{"perf"}, false},
		{[]string{"e2e", "perf", "--one-process"}, true},
		{[]string{"perf", "--one-process", "--profile"}, true},
		{[]string{"--full", "--one-process"}, true},
	} {
		o := &runOptions{}
		cmd := newRunCmd(o)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		gs, err := o.selected(cmd.Flags().Args())
		if err != nil {
			t.Fatal(err)
		}
		if err := o.checkOneProcess(gs); (err != nil) != tc.wantErr {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}

func TestInstancesFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"e2e"}, false},
		{[]string{"e2e", "--instances", "2"}, false},
		{[]string{"e2e", "--instances", "0"}, true},
		{[]string{"perf", "--instances", "2", "--one-process"}, true},
		{[]string{"perf", "--instances", "1", "--one-process"}, false},
	} {
		o := &runOptions{}
		if err := newRunCmd(o).ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := o.checkInstances(); (err != nil) != tc.wantErr {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
}
