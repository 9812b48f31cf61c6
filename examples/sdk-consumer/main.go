// Command sdk-consumer is what a product team's module looks like when it imports the Q-IM Go
// SDK and nothing else: its own go.mod requires github.com/qim-dev/qim/sdk alone. It logs in as
// one user, sends one message to another and prints what arrives until interrupted.
//
//	go run . -gateway 127.0.0.1:7000 -token "$TOKEN" -user 1001 -device laptop -to 1002 -text hello
//
// examples/graph_test.go (in the root module) builds it and fails when its module graph gains
// the servers' or the harness's dependencies (ADR-0031).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

func main() {
	gateway := flag.String("gateway", "127.0.0.1:7000", "gateway address (host:port, plain TCP)")
	token := flag.String("token", "", "the user's credential")
	user := flag.Uint64("user", 0, "the user id the token names")
	device := flag.String("device", "sdk-consumer", "this installation's device id")
	to := flag.Uint64("to", 0, "user to send -text to (0: send nothing)")
	text := flag.String("text", "hello from sdk-consumer", "message body")
	dir := flag.String("data", filepath.Join(os.TempDir(), "qim-sdk-consumer"), "local store directory (absolute)")
	flag.Parse()
	if err := run(*gateway, *token, contract.UserID(*user), *device, contract.UserID(*to), *text, *dir); err != nil {
		log.Fatal(err)
	}
}

func run(gateway, token string, user contract.UserID, device string, to contract.UserID, text, dir string) error {
	c, err := sdk.Open(sdk.Config{DataDir: dir, Endpoint: contract.Endpoint{Address: gateway, Mode: contract.ModeTCP},
		User: user, Device: device, Token: sdk.StaticToken(token)})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	if to != 0 {
		if _, err := c.Send(ctx, to, []byte(text), sdk.SendOptions{}); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-c.Events():
			if m, ok := ev.(sdk.MessagesAdded); ok {
				for _, msg := range m.Messages {
					fmt.Printf("%d: %s\n", msg.Sender, msg.Body)
				}
			}
		}
	}
}
