package proc

import "os"

// baseVars are the harness's variables every child gets: what a program needs to find its
// tools and write temporary files (PATH, HOME, TMPDIR), the locale and time zone, the JDK the
// Kafka and Cassandra servers run on, and the Go runtime's own knobs (a coverage build, the race
// detector, tracebacks). Nothing named QIM_*: a service learns its configuration from the
// variables its deployment gives it, never from the shell that ran the harness.
var baseVars = []string{
	"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ",
	"JAVA_HOME",
	"GOCOVERDIR", "GORACE", "GOTRACEBACK", "GODEBUG", "GOMAXPROCS", "GOMEMLIMIT",
}

// BaseEnv is the start of every child's explicit environment: the harness's values of
// baseVars that are set, then extra (KEY=VALUE) in order, so a later entry overrides.
func BaseEnv(extra ...string) []string {
	env := make([]string, 0, len(baseVars)+len(extra))
	for _, k := range baseVars {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}
