package admin

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/services/internal/rpc"
)

// conns is one gRPC channel per configured address, with the typed client of each; the writers
// and the RoomWriters share it. grpc.NewClient connects on the first call, so an instance that
// is down now fails only the calls sent to it, not the admin API's start.
type conns[C any] struct {
	cc      []*grpc.ClientConn
	clients []C
}

// backendConnectTimeout bounds one dial of a writer or RoomWriter.
const backendConnectTimeout = 5 * time.Second

// dialAll makes a channel and a client per address; what names the service in errors.
func dialAll[C any](what string, addrs []string, creds grpc.DialOption, client func(grpc.ClientConnInterface) C) (conns[C], error) {
	var c conns[C]
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, creds, rpc.Reconnect(backendConnectTimeout))
		if err != nil {
			_ = c.Close()
			return conns[C]{}, fmt.Errorf("admin: %s %s: %w", what, a, err)
		}
		c.cc = append(c.cc, cc)
		c.clients = append(c.clients, client(cc))
	}
	return c, nil
}

// Close closes every channel.
func (c conns[C]) Close() error {
	var errs []error
	for _, cc := range c.cc {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}
