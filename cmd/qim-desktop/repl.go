package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// console serialises output from the command loop (the only writer).
type console struct {
	mu  sync.Mutex
	out io.Writer
}

func (c *console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format+"\n", args...)
}

// run opens the client and serves commands and events until /quit, end of input, a signal or a
// final kick. It returns the exit code; the caller exits the process with it, which also ends the
// stdin reader still blocked in Read.
func run(cfg sdk.Config, in io.Reader, out io.Writer) int {
	con := &console{out: out}
	c, err := sdk.Open(cfg)
	if err != nil {
		con.printf("error: %v", err)
		return 1
	}
	con.printf("qim-desktop: user %d, device %s; store %s", cfg.User, cfg.Device, c.StorePath())
	con.printf("type /login to connect, /help for commands")
	lines := make(chan string)
	go readLines(in, lines) // never waited for: os.Exit ends it (see package comment)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	code := 0
	for done := false; !done; {
		select {
		case line, ok := <-lines:
			if !ok {
				done = true // end of input
				break
			}
			done = handle(c, con, line)
		case ev, ok := <-c.Events():
			if !ok {
				done = true
				break
			}
			done = render(c, con, ev)
		case <-sigs:
			done = true
		}
	}
	if err := c.Close(); err != nil {
		con.printf("error: close: %v", err)
		code = 1
	}
	con.printf("bye")
	return code
}

func readLines(in io.Reader, lines chan<- string) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines <- sc.Text()
	}
	close(lines)
}

// helpText is /help's answer; main.go's Long lists the same commands.
const helpText = `/login  /logout  /msg USER TEXT  /history USER [N]  /pending  /convs  /read USER  /quit
/recall USER SEQ  /edit USER SEQ TEXT  /delete USER SEQ   (SEQ: the message's #number)
/react USER SEQ KEY  /unreact USER SEQ KEY   (KEY: an emoji or a short word)
/share-reads on|off   (off: nobody sees your reads, and you see nobody's)
/gcreate NAME USER,USER...  /gmsg GROUP TEXT  /members GROUP  /receipts GROUP [SEQ]  /leave GROUP
/join ROOM [FROM]  /room ROOM TEXT  /rooms  /leave ROOM
  GROUP: a group's 32-digit id, or the start of one this device knows (the 8 digits printed)
  ROOM: a room id in hex, 1 to 32 digits (e.g. 2a), or the start (8+ digits) of a joined one;
  FROM: replay the room from this room_seq (0: all the server still holds). Rooms are live only:
  nothing of them is stored, and the client rejoins them after a reconnect`

// handle runs one command line; it reports true when the program must exit.
func handle(c *sdk.Client, con *console, line string) bool {
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	ctx := context.Background()
	switch cmd {
	case "/quit", "/exit":
		return true
	case "/help":
		con.printf("%s", helpText)
	case "/login":
		if err := c.Connect(ctx); err != nil {
			con.printf("error: %v", err)
		} else {
			con.printf("connecting...")
		}
	case "/logout":
		c.Disconnect()
	case "/msg":
		cmdMsg(ctx, c, con, rest)
	case "/history":
		cmdHistory(ctx, c, con, rest)
	case "/pending":
		cmdPending(ctx, c, con)
	case "/convs":
		cmdConvs(ctx, c, con)
	case "/read":
		cmdRead(ctx, c, con, rest)
	case "/recall":
		cmdAmend(ctx, c, con, contract.AmendRecall, rest)
	case "/edit":
		cmdAmend(ctx, c, con, contract.AmendEdit, rest)
	case "/delete":
		cmdAmend(ctx, c, con, contract.AmendDelete, rest)
	case "/react", "/unreact":
		cmdReact(ctx, c, con, rest, cmd == "/unreact")
	case "/receipts":
		cmdReceipts(ctx, c, con, rest)
	case "/share-reads":
		cmdShareReads(ctx, c, con, rest)
	case "/gcreate":
		cmdGCreate(ctx, c, con, rest)
	case "/gmsg":
		cmdGMsg(ctx, c, con, rest)
	case "/members":
		cmdMembers(ctx, c, con, rest)
	case "/leave":
		cmdLeave(ctx, c, con, rest)
	case "/join":
		cmdJoin(ctx, c, con, rest)
	case "/room":
		cmdRoom(ctx, c, con, rest)
	case "/rooms":
		cmdRooms(c, con)
	default:
		con.printf("unknown command %q (/help)", cmd)
	}
	return false
}

func parseUser(s string) (contract.UserID, error) {
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || u == 0 {
		return 0, fmt.Errorf("user must be a non-zero decimal id, got %q", s)
	}
	return contract.UserID(u), nil
}

func cmdMsg(ctx context.Context, c *sdk.Client, con *console, rest string) {
	to, text, ok := strings.Cut(rest, " ")
	peer, err := parseUser(to)
	if !ok || err != nil || strings.TrimSpace(text) == "" {
		con.printf("usage: /msg USER TEXT")
		return
	}
	cmid, err := c.Send(ctx, peer, []byte(text), sdk.SendOptions{})
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("[pending] %s to %d", shortID(contract.U128(cmid)), peer)
}

func cmdHistory(ctx context.Context, c *sdk.Client, con *console, rest string) {
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		con.printf("usage: /history USER [N]")
		return
	}
	peer, err := parseUser(fields[0])
	n := 20
	if err == nil && len(fields) > 1 {
		n, err = strconv.Atoi(fields[1])
	}
	if err != nil || n <= 0 {
		con.printf("usage: /history USER [N]")
		return
	}
	page, err := c.History(ctx, c.DirectConversation(peer), 0, sdk.Older, n)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	src := "server"
	if !page.FromServer {
		src = "local (offline)"
	}
	con.printf("history with %d (%s, %d messages):", peer, src, len(page.Messages))
	for _, m := range page.Messages {
		con.printf("  #%d %s", m.Seq, describe(c, m))
	}
}

func cmdPending(ctx context.Context, c *sdk.Client, con *console) {
	ps, err := c.Pending(ctx)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("%d pending:", len(ps))
	for _, p := range ps {
		state := "queued"
		if p.State == sdk.PendingFailed {
			state = "failed " + p.ErrorCode.String()
		}
		con.printf("  %s to %s [%s]: %s", shortID(contract.U128(p.ClientMessageID)), target(p.Conversation, p.Peer), state,
			printable(p.Body))
	}
}

func cmdConvs(ctx context.Context, c *sdk.Client, con *console) {
	cs, err := c.Conversations(ctx)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("%d conversations:", len(cs))
	for _, cv := range cs {
		extra := ""
		if cv.Incomplete {
			extra = " (incomplete)"
		}
		con.printf("  %s: latest #%d, unread %d%s", target(cv.ID, cv.Peer), cv.LatestSeq, cv.Unread, extra)
	}
}

func cmdRead(ctx context.Context, c *sdk.Client, con *console, rest string) {
	peer, err := parseUser(rest)
	if err != nil {
		con.printf("usage: /read USER")
		return
	}
	cv, err := c.MarkRead(ctx, c.DirectConversation(peer), contract.ConversationSeq(1<<62))
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("read up to #%d, unread %d", cv.ReadSeq, cv.Unread)
}

// target names a conversation: "group 2a3f9c01" or "with 1002".
func target(conv contract.ConversationID, peer contract.UserID) string {
	if conv.Kind() == contract.KindGroup {
		return "group " + shortID(contract.U128(conv))
	}
	return "with " + strconv.FormatUint(uint64(peer), 10)
}
