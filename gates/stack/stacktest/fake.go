// Package stacktest holds a stack.Stack for the tests of code that only reads a stack's
// endpoints: it starts nothing and every call succeeds.
package stacktest

import (
	"context"

	"github.com/qim-dev/qim/gates/stack"
)

// Fake is a stack whose endpoints are EP.
type Fake struct{ EP stack.Endpoints }

func (f Fake) Up(context.Context) error         { return nil }
func (f Fake) Down(context.Context) error       { return nil }
func (f Fake) Endpoints() stack.Endpoints       { return f.EP }
func (f Fake) Logs(string, int) (string, error) { return "", nil }
func (f Fake) Check(context.Context) error      { return nil }

var _ stack.Stack = Fake{}
