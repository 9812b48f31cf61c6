package proc

import (
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		line string
		want member
		pgrp int
		ok   bool
	}{
		{"4711 (sh) S 1 4711 4711 0 -1", member{4711, 1, 'S'}, 4711, true},
		{"12 (a b) c)) T 11 9 9 0", member{12, 11, 'T'}, 9, true},
		{"12 (x) D", member{}, 0, false},
		{"garbage", member{}, 0, false},
		{"", member{}, 0, false},
	} {
		m, pgrp, ok := parseStat(c.line)
		if m != c.want || pgrp != c.pgrp || ok != c.ok {
			t.Errorf("parseStat(%q) = %+v, %d, %v; want %+v, %d, %v", c.line, m, pgrp, ok, c.want, c.pgrp, c.ok)
		}
	}
}

// The vfork case is the one a leader-only check hung on: the shell waits in D for a child that
// was stopped before its exec.
func TestFrozen(t *testing.T) {
	for _, c := range []struct {
		name string
		ms   []member
		want bool
	}{
		{"leader stopped", []member{{10, 1, 'T'}}, true},
		{"leader and child stopped", []member{{10, 1, 'T'}, {11, 10, 'T'}}, true},
		{"vfork parent waits on a stopped child", []member{{10, 1, 'D'}, {11, 10, 'T'}}, true},
		{"stopped child, exited grandchild", []member{{10, 1, 'T'}, {11, 10, 'Z'}}, true},
		{"leader still running", []member{{10, 1, 'R'}, {11, 10, 'T'}}, false},
		{"leader sleeping", []member{{10, 1, 'S'}}, false},
		{"D without a stopped child", []member{{10, 1, 'D'}}, false},
		{"D whose stopped process is not its child", []member{{10, 1, 'D'}, {11, 1, 'T'}}, false},
		{"child still running", []member{{10, 1, 'T'}, {11, 10, 'R'}}, false},
		{"leader missing", []member{{11, 10, 'T'}}, false},
		{"empty group", nil, false},
	} {
		if got := frozen(c.ms, 10); got != c.want {
			t.Errorf("%s: frozen = %v, want %v", c.name, got, c.want)
		}
	}
}

// groupMembers finds this test process in its own group.
func TestGroupMembersFindsSelf(t *testing.T) {
	pgid, err := syscall.Getpgid(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range groupMembers(pgid) {
		if m.pid == os.Getpid() {
			return
		}
	}
	t.Fatalf("pid %d not among group %d's members %s", os.Getpid(), pgid, describe(groupMembers(pgid)))
}
