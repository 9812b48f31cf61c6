package itest

import (
	"sync"
	"testing"

	"github.com/qim-dev/qim/gates/stack"
)

// Pause SIGSTOPs server on the package's stack (a broker that accepts connections and never
// answers) and returns the function that resumes it. Resume is idempotent and also runs when t
// ends, before the stack's after-test check; a provider that cannot pause skips t.
func Pause(t testing.TB, server string) (resume func()) {
	t.Helper()
	faults, ok := Stack(t).(stack.Faults)
	if !ok {
		t.Skip("the stack provider cannot pause a server")
	}
	if err := faults.Pause(server); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := faults.Resume(server); err != nil {
				t.Errorf("resume %s: %v", server, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}
