package stack

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/gates/ports"
)

// freePorts returns n distinct loopback ports that were free a moment ago (gates/ports). Another
// process may still take one before our server binds it, which is why every server's readiness
// also checks ownsListener and a start that hits "Address already in use" is retried with new
// ports.
func freePorts(n int) ([]int, error) {
	ps, err := ports.Pick(n)
	if err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	return ps, nil
}

// ownsListener reports whether process pid holds a listening TCP socket on port (any local
// address, IPv4 or IPv6). It reads /proc/net/tcp{,6} for the socket inode and looks for
// that inode among /proc/<pid>/fd. This is how the stack makes sure a readiness probe that
// succeeds is talking to its own server and not to whoever else got the port.
func ownsListener(pid, port int) (bool, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listenInodes(f, port, inodes); err != nil && !os.IsNotExist(err) {
			return false, err
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		link, err := os.Readlink(fdDir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true, nil
		}
	}
	return false, nil
}

func listenInodes(path string, port int, into map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" { // 0A = TCP_LISTEN
			continue
		}
		i := strings.LastIndexByte(fs[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(fs[1][i+1:], 16, 16)
		if err == nil && int(p) == port {
			into[fs[9]] = true
		}
	}
	return sc.Err()
}

// portHolder names the process (pid and command) holding a listener on port, for error
// messages about port clashes. Empty when unknown.
func portHolder(port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		_ = listenInodes(f, port, inodes)
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if strings.HasPrefix(link, "socket:[") && inodes[link[8:len(link)-1]] {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				return fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
			}
		}
	}
	return "another process"
}
