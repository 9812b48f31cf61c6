package gateway

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/qim-dev/qim/services/internal/rpc"
)

// dialBackend creates the gRPC channel to a backend (writer, mailbox or session) with the
// boundary's credentials (mTLS, or plaintext on loopback: rpcauth). Nothing is contacted until
// first use; the channel reconnects on its own.
//
// The reconnect backoff is capped at 2 s (gRPC's default is 120 s): a backend restarted under
// load must be found again well inside the contract's 7 s unavailability budget.
func dialBackend(addr string, connectTimeout time.Duration, creds grpc.DialOption) (*grpc.ClientConn, error) {
	cc, err := grpc.NewClient(addr,
		creds,
		rpc.Reconnect(connectTimeout),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(8<<20)),
	)
	if err != nil {
		return nil, fmt.Errorf("gateway: dial %s: %w", addr, err)
	}
	return cc, nil
}

// waitBackendReady reports nil once the channel is READY, driving it out of IDLE; it fails when
// ctx ends first. Readiness is a real HTTP/2 handshake with the backend, not a lazily created
// client object.
func waitBackendReady(ctx context.Context, name string, cc *grpc.ClientConn) error {
	for {
		state := cc.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			cc.Connect()
		case connectivity.Shutdown:
			return fmt.Errorf("gateway: %s backend channel is shut down", name)
		}
		if !cc.WaitForStateChange(ctx, state) {
			return fmt.Errorf("gateway: %s backend not ready (%s)", name, state)
		}
	}
}
