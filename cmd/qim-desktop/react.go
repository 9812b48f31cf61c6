package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Reactions and group read receipts: /react USER SEQ KEY and /unreact USER SEQ KEY name a message
// of a direct conversation by its #seq (as /recall does); /receipts GROUP [SEQ] pulls who of a
// group read how far.

// cmdReact runs /react (remove false) or /unreact.
func cmdReact(ctx context.Context, c *sdk.Client, con *console, rest string, remove bool) {
	usage := map[bool]string{false: "/react USER SEQ KEY", true: "/unreact USER SEQ KEY"}[remove]
	m, key, err := amendTarget(ctx, c, rest, true)
	if err != nil {
		con.printf("usage: %s (%v)", usage, err)
		return
	}
	rs, changed, err := c.React(ctx, m, strings.TrimSpace(key), remove)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	note := ""
	if !changed {
		note = " (unchanged)"
	}
	con.printf("[reactions] #%d %s%s", m.Seq, describeReactions(rs), note)
}

// describeReactions renders counts as "👍 2* 🎉 1" (* marks the user's own).
func describeReactions(rs []sdk.Reaction) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = printable([]byte(r.Key)) + " " + strconv.Itoa(r.Count)
		if r.Mine {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, "  ")
}

// describeReaction renders a ReactionChanged event.
func describeReaction(e sdk.ReactionChanged) string {
	verb := "reacted"
	if e.Removed {
		verb = "took back"
	}
	return fmt.Sprintf("[reaction] %d %s %s on #%d: %s", e.User, verb, printable([]byte(e.Key)), e.Seq, describeReactions(e.Reactions))
}

// cmdReceipts runs /receipts GROUP [SEQ].
func cmdReceipts(ctx context.Context, c *sdk.Client, con *console, rest string) {
	f := strings.Fields(rest)
	if len(f) == 0 || len(f) > 2 {
		con.printf("usage: /receipts GROUP [SEQ] (missing arguments)")
		return
	}
	group, err := findGroup(ctx, c, f[0])
	if err != nil {
		con.printf("usage: /receipts GROUP [SEQ] (%v)", err)
		return
	}
	var seq uint64
	if len(f) == 2 {
		if seq, err = strconv.ParseUint(strings.TrimPrefix(f[1], "#"), 10, 63); err != nil {
			con.printf("usage: /receipts GROUP [SEQ] (SEQ must be a message's #number, got %q)", f[1])
			return
		}
	}
	r, err := c.ReadReceipts(ctx, group, contract.ConversationSeq(seq))
	if err != nil {
		con.printf("error: %s", groupError(err))
		return
	}
	if seq > 0 {
		con.printf("group %s #%d: read by %d of %d", shortID(contract.U128(group)), seq, r.ReadCount, r.Audience)
	}
	for _, m := range r.Reads {
		con.printf("  %s read up to #%d", userName(c, m.User), m.Read)
	}
}

// cmdShareReads runs /share-reads on|off.
func cmdShareReads(ctx context.Context, c *sdk.Client, con *console, rest string) {
	share, ok := map[string]bool{"on": true, "off": false}[strings.TrimSpace(rest)]
	if !ok {
		con.printf("usage: /share-reads on|off (got %q)", rest)
		return
	}
	if err := c.SetReadReceipts(ctx, share); err != nil {
		con.printf("error: %v", err)
		return
	}
	if share {
		con.printf("read receipts shared: others see your reads, you see theirs")
	} else {
		con.printf("read receipts withheld: nobody sees your reads, and you see nobody's")
	}
}
