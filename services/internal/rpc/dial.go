package rpc

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// ReconnectMax caps the pause between reconnection attempts of an internal channel. gRPC's
// default grows to 120 s: a service whose peer restarted would then fail every call to it for
// up to two minutes after the peer was back. 2 s costs one dial attempt every 2 s per channel
// while the peer is down, which is nothing.
const ReconnectMax = 2 * time.Second

// Reconnect is the dial option of every internal channel: reconnect after 100 ms, growing by 1.6
// to ReconnectMax, each attempt allowed connectTimeout.
func Reconnect(connectTimeout time.Duration) grpc.DialOption {
	return grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: ReconnectMax},
		MinConnectTimeout: connectTimeout,
	})
}
