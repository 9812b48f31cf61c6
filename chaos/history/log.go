package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/qim-dev/qim/contract"
)

// The log's text form, one event per line, zstd-compressed on disk (zstdcat shows it):
//
//	<kind> <at_us> <lane> <sender> <ordinal> <recipient> <message_id|-> <conversation|-> <conv_seq> <mailbox_seq> <code> <flags>
//
// ids are 32 lowercase hex digits; flags is a string of letters (a = App, x = Foreign) or "-".
// A text form costs about three times the bytes of a binary one before compression and almost
// nothing after; it lets an operator grep a cell's history for one message.

// ErrFormat is wrapped by every parse error.
var ErrFormat = errors.New("history: malformed log line")

// Encode writes events in the text form.
func Encode(w io.Writer, events []Event) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := range events {
		if _, err := bw.WriteString(formatEvent(&events[i])); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func formatEvent(e *Event) string {
	flags := ""
	if e.App {
		flags += "a"
	}
	if e.Foreign {
		flags += "x"
	}
	if flags == "" {
		flags = "-"
	}
	return fmt.Sprintf("%s %d %s %d %d %d %s %s %d %d %d %s\n", e.Kind, e.AtUs, e.Lane, e.Sender, e.Ordinal,
		e.Recipient, idString(contract.U128(e.MessageID)), idString(contract.U128(e.Conversation)),
		e.ConvSeq, e.MailboxSeq, uint32(e.Code), flags)
}

func idString(u contract.U128) string {
	if u.IsZero() {
		return "-"
	}
	return u.String()
}

// Decode reads events written by Encode.
func Decode(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []Event
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		e, err := parseEvent(line)
		if err != nil {
			return nil, fmt.Errorf("%w %d: %v", ErrFormat, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

func parseEvent(line string) (Event, error) {
	f := strings.Fields(line)
	if len(f) != 12 {
		return Event{}, fmt.Errorf("%d fields, want 12", len(f))
	}
	var e Event
	k, ok := kindByLetter(f[0])
	if !ok {
		return e, fmt.Errorf("unknown kind %q", f[0])
	}
	e.Kind = k
	switch f[2] {
	case "f":
		e.Lane = Frame
	case "s":
		e.Lane = SDK
	default:
		return e, fmt.Errorf("unknown lane %q", f[2])
	}
	nums := make([]uint64, 0, 7)
	for _, i := range []int{1, 3, 4, 5, 8, 9, 10} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return e, fmt.Errorf("field %d: %v", i+1, err)
		}
		nums = append(nums, v)
	}
	e.AtUs, e.Sender, e.Ordinal, e.Recipient = int64(nums[0]), contract.UserID(nums[1]), nums[2], contract.UserID(nums[3])
	e.ConvSeq, e.MailboxSeq, e.Code = nums[4], nums[5], contract.ErrorCode(nums[6])
	mid, err := parseID(f[6])
	if err != nil {
		return e, fmt.Errorf("message_id: %v", err)
	}
	conv, err := parseID(f[7])
	if err != nil {
		return e, fmt.Errorf("conversation: %v", err)
	}
	e.MessageID, e.Conversation = contract.MessageID(mid), contract.ConversationID(conv)
	e.App, e.Foreign = strings.Contains(f[11], "a"), strings.Contains(f[11], "x")
	return e, nil
}

func kindByLetter(s string) (Kind, bool) {
	for k, l := range kindLetters {
		if l != "" && l == s {
			return Kind(k), true
		}
	}
	return 0, false
}

func parseID(s string) (contract.U128, error) {
	if s == "-" {
		return contract.U128{}, nil
	}
	return contract.ParseU128(s)
}

// WriteFile writes events to path, zstd-compressed.
func WriteFile(path string, events []Event) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw, err := zstd.NewWriter(f)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := Encode(zw, events); err != nil {
		zw.Close()
		return fmt.Errorf("history: write %s: %w", path, err)
	}
	return zw.Close()
}

// ReadFile reads a log written by WriteFile.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer zr.Close()
	evs, err := Decode(zr)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	return evs, nil
}
