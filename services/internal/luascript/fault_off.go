//go:build !failpoints

package luascript

import "context"

// faultSource is the script-fault hook of a failpoints build (fault_on.go). In a normal build it
// answers false; the compiler inlines it, so Run and Do carry no branch, no context lookup and
// no second source for it.
func faultSource(context.Context, *Script) (string, bool) { return "", false }
