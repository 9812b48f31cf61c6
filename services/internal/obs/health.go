package obs

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// maxReasonBytes caps a /healthz reason: enough to name the failing dependency, too short to
// carry a dump of whatever a dependency put into its error.
const maxReasonBytes = 512

var (
	// urlUserinfo matches the credentials part of a URL (redis://user:pass@host).
	urlUserinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)
	// secretAssignment matches key=value or key: value pairs whose key names a credential.
	secretAssignment = regexp.MustCompile(`(?i)\b(password|passwd|pwd|token|secret|authorization|api[_-]?key)(\s*[=:]\s*)\S+`)
)

// healthReport is the /healthz verdict: healthy only when readiness passed AND every invariant
// counter is zero. Lines name each problem.
func (s *Server) healthReport(ctx context.Context) (int, string) {
	var lines []string
	for _, v := range s.reg.Violations() {
		lines = append(lines, "invariant violated: "+v.Name+" = "+strconv.FormatFloat(v.Value, 'f', -1, 64))
	}
	if err := s.ready(ctx); err != nil {
		lines = append(lines, "not ready: "+safeReason(err.Error()))
	}
	if len(lines) == 0 {
		return http.StatusOK, "ok\n"
	}
	return http.StatusServiceUnavailable, strings.Join(lines, "\n") + "\n"
}

func (s *Server) healthz(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), s.readyTimeout)
	defer cancel()
	status, body := s.healthReport(ctx)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// safeReason makes a readiness error fit for an unauthenticated endpoint: credentials in URLs and
// key=value pairs are masked, the text is one line, and it is cut at maxReasonBytes. Readiness
// errors are written by this module and should never hold a secret; this is the second fence.
func safeReason(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}***@")
	s = secretAssignment.ReplaceAllString(s, "${1}${2}***")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxReasonBytes {
		cut := maxReasonBytes
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
