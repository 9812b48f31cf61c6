package main

import (
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// /react, /unreact and /receipts explain themselves without their arguments and send nothing.
func TestReactAndReceiptCommandsOffline(t *testing.T) {
	cmd, stdin, out := startDesktop(t, "127.0.0.1:1")
	if _, err := stdin.WriteString("/help\n/react 8\n/unreact 8 3\n/react 8 3 +1\n/receipts\n/receipts 2aaa 1 2\n/share-reads maybe\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 5*time.Second, out)
	for _, want := range []string{"/react USER SEQ KEY", "/receipts GROUP [SEQ]", "usage: /react USER SEQ KEY (missing arguments)",
		"usage: /unreact USER SEQ KEY (missing arguments)", "usage: /react USER SEQ KEY (no message #3 with 8 on this device",
		"usage: /receipts GROUP [SEQ] (missing arguments)", `usage: /share-reads on|off (got "maybe")`, "/share-reads on|off"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDescribeReactions(t *testing.T) {
	ev := sdk.ReactionChanged{Conversation: contract.DirectConversationID(contract.TenantID{}, 1, 2), Seq: 4, User: 9, Key: "👍",
		Reactions: []sdk.Reaction{{Key: "👍", Count: 2}, {Key: "\x1b[31m", Count: 1}}}
	got := describeReaction(ev)
	if !strings.HasPrefix(got, "[reaction] 9 reacted 👍 on #4: 👍 2  ") || strings.Contains(got, "\x1b") {
		t.Fatalf("describeReaction = %q", got)
	}
	if got := describeReactions([]sdk.Reaction{{Key: "ok", Count: 3, Mine: true}}); got != "ok 3*" {
		t.Fatalf("describeReactions = %q", got)
	}
}
