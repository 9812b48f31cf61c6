package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// failingHistory answers every read with err.
type failingHistory struct{ err error }

func (f failingHistory) LatestSeqs(context.Context, contract.TenantID, []contract.ConversationID) ([]uint64, error) {
	return nil, f.err
}

func (f failingHistory) Tails(context.Context, contract.TenantID, []msgstore.TailQuery) ([]msgstore.Tail, error) {
	return nil, f.err
}

// Corrupt state, the session's own or the history's, is INTERNAL; a failed dependency is
// UNAVAILABLE; a refusal keeps its code; and no storage detail reaches the client's message.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	hist := func(err error) error {
		_, lerr := failingHistory{err}.LatestSeqs(ctx, contract.TenantID{}, nil)
		_, terr := failingHistory{err}.Tails(ctx, contract.TenantID{}, nil)
		if !errors.Is(lerr, err) || !errors.Is(terr, err) || lerr.Error() != err.Error() {
			t.Fatalf("history error changed: %v / %v, want %v", lerr, terr, err)
		}
		return fmt.Errorf("session: history: %w", terr)
	}
	missing := &msgstore.CorruptError{Seq: 2, Reason: "history record missing"}
	for _, tc := range []struct {
		name string
		err  error
		want contract.ErrorCode
	}{
		{"ok", nil, contract.ErrCodeUnspecified},
		{"session state", fmt.Errorf("%w: checkpoint of partition 3 is %q", ErrCorruptState, "x"), contract.ErrCodeInternal},
		{"history record", hist(missing), contract.ErrCodeInternal},
		{"history unreachable", hist(errors.New("dial tcp 10.0.0.7:6379: connection refused")), contract.ErrCodeUnavailable},
		{"refusal", rpc.Refuse(contract.ErrCodeNotMember, "not a participant of this conversation"), contract.ErrCodeNotMember},
	} {
		if got := rpc.CodeOf(tc.err); got != tc.want {
			t.Errorf("%s: CodeOf(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
	for _, err := range []error{hist(errors.New("dial tcp 10.0.0.7:6379: connection refused")), hist(missing)} {
		if msg := rpc.ClientMessage(err); msg == "" || strings.Contains(msg, "10.0.0.7") || strings.Contains(msg, "history record") {
			t.Errorf("client message %q for %v", msg, err)
		}
	}
}
