package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ProcessInfo describes one running server of the process provider.
type ProcessInfo struct {
	Server  string
	PID     int // also its process group id
	ReadyIn time.Duration
	RSSKiB  int64 // VmRSS from /proc/<pid>/status, 0 when gone
}

// Introspector is implemented by the process provider's Stack (type-assert to use it).
type Introspector interface {
	Processes() []ProcessInfo
}

func (s *processStack) Endpoints() Endpoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := s.ep
	ep.KafkaBrokers = append([]string(nil), s.ep.KafkaBrokers...)
	if s.ep.Secure != nil {
		sec := *s.ep.Secure
		ep.Secure = &sec
	}
	return ep
}

func (s *processStack) Logs(server string, n int) (string, error) {
	switch server {
	case ServerRedisCore, ServerRedisMailbox, ServerKafka, ServerCQL:
	default:
		return "", fmt.Errorf("stack: unknown server %q", server)
	}
	return tailFile(filepath.Join(s.dir, "logs", server+".log"), n)
}

func (s *processStack) Processes() []ProcessInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessInfo, 0, len(s.order))
	for _, n := range s.order {
		c := s.children[n]
		out = append(out, ProcessInfo{Server: n, PID: c.pid, ReadyIn: s.readyIn[n], RSSKiB: rssKiB(c.pid)})
	}
	return out
}

// rssKiB reads VmRSS of a process (0 when it is gone).
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return 0
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
