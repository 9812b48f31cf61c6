package chaos

import (
	"context"

	"github.com/qim-dev/qim/gates/stack"
)

type fakeStack struct{}

func (fakeStack) Up(context.Context) error         { return nil }
func (fakeStack) Down(context.Context) error       { return nil }
func (fakeStack) Endpoints() stack.Endpoints       { return stack.Endpoints{Provider: "fake"} }
func (fakeStack) Logs(string, int) (string, error) { return "", nil }
func (fakeStack) Check(context.Context) error      { return nil }

type fakeFaultStack struct{ fakeStack }

func (fakeFaultStack) Kill(string) error                     { return nil }
func (fakeFaultStack) Pause(string) error                    { return nil }
func (fakeFaultStack) Resume(string) error                   { return nil }
func (fakeFaultStack) Restart(context.Context, string) error { return nil }
