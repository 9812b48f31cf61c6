package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// member is one process of a group as /proc/<pid>/stat shows it.
type member struct {
	pid, ppid int
	state     byte
}

// groupMembers reads /proc for the processes whose process group is pgid. A process that exits
// between the directory listing and the read is left out.
func groupMembers(pgid int) []member {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ms []member
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		m, group, ok := parseStat(string(b))
		if ok && group == pgid {
			ms = append(ms, m)
		}
	}
	return ms
}

// parseStat reads pid, state, ppid and pgrp from one /proc/<pid>/stat line; comm, the second
// field, may hold spaces and parentheses, so the fields after it are found from the last ')'.
func parseStat(s string) (m member, pgrp int, ok bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return member{}, 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 || f[0] == "" {
		return member{}, 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, err2 := strconv.Atoi(f[1])
	pgrp, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return member{}, 0, false
	}
	return member{pid: pid, ppid: ppid, state: f[0][0]}, pgrp, true
}

// frozen reports whether no member of a SIGSTOPped group can run again before SIGCONT: each is
// stopped (T), gone (Z, X), or a vfork parent (D) whose child in the group is stopped. The last
// case is not hypothetical: dash vforks simple commands, and a SIGSTOP that reaches the child
// between vfork and exec leaves the parent waiting in the kernel for an exec that comes only
// after SIGCONT, so the parent never reaches its own stop (seen in CI on a loaded machine).
// Waiting for the leader's T alone was the rejected alternative: it hung for the full bound.
func frozen(ms []member, leader int) bool {
	stopped := map[int]bool{} // parent pid -> has a stopped child in the group
	found := false
	for _, m := range ms {
		found = found || m.pid == leader
		if m.state == 'T' {
			stopped[m.ppid] = true
		}
	}
	if !found {
		return false
	}
	for _, m := range ms {
		switch {
		case m.state == 'T' || m.state == 'Z' || m.state == 'X':
		case m.state == 'D' && stopped[m.pid]:
		default:
			return false
		}
	}
	return true
}

// describe lists the members' states for an error message: "4711 S, 4712 T".
func describe(ms []member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%d %c", m.pid, m.state)
	}
	return strings.Join(parts, ", ")
}
