package chaos

import (
	"context"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/stack/stacktest"
)

// fakeStack is a stack the matrix can be configured against without starting anything.
var fakeStack = stacktest.Fake{EP: stack.Endpoints{Provider: "fake"}}

type fakeFaultStack struct{ stacktest.Fake }

func (fakeFaultStack) Kill(string) error                     { return nil }
func (fakeFaultStack) Pause(string) error                    { return nil }
func (fakeFaultStack) Resume(string) error                   { return nil }
func (fakeFaultStack) Restart(context.Context, string) error { return nil }
