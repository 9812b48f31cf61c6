// Package rpc holds server-side helpers shared by the services: the one mapping from errors to
// client-visible contract codes, and a bounded graceful gRPC stop.
package rpc

import (
	"time"

	"google.golang.org/grpc"
)

// Stop drains in-flight RPCs for up to grace, then cuts them: a shutdown never waits forever on
// a stream a peer keeps open (a gateway's send stream lives as long as the gateway).
func Stop(gs *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		gs.Stop()
		<-done
	}
}
