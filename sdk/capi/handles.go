package main

import (
	"context"
	"sync"

	"github.com/qim-dev/qim/sdk"
)

// client is one open SDK client behind a handle.
type client struct {
	c *sdk.Client
	// ctx lives until qim_client_close: Connect's loop runs under it.
	ctx    context.Context
	cancel context.CancelFunc
}

// handles maps the handles C holds to clients. A handle is never reused, so a stale one can only
// miss (QIM_E_HANDLE), never reach another client; a map rather than runtime/cgo.Handle because
// cgo.Handle.Value panics on a handle that was deleted, and a C caller's use-after-close must be
// an error code, not a crash of the host process.
var handles = struct {
	sync.Mutex
	next uint64
	m    map[uint64]*client
}{m: map[uint64]*client{}}

func register(c *client) uint64 {
	handles.Lock()
	defer handles.Unlock()
	handles.next++
	handles.m[handles.next] = c
	return handles.next
}

func lookup(h uint64) (*client, error) {
	handles.Lock()
	defer handles.Unlock()
	c, ok := handles.m[h]
	if !ok {
		return nil, errorf(codeHandle, "no open client has handle %d", h)
	}
	return c, nil
}

// unregister removes h and returns its client.
func unregister(h uint64) (*client, error) {
	handles.Lock()
	defer handles.Unlock()
	c, ok := handles.m[h]
	if !ok {
		return nil, errorf(codeHandle, "no open client has handle %d", h)
	}
	delete(handles.m, h)
	return c, nil
}
