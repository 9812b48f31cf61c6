package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
)

func TestCodeOf(t *testing.T) {
	corrupt := fmt.Errorf("msgstore: record 7: %w", fmt.Errorf("store: %w", ErrCorrupt))
	for _, tc := range []struct {
		name string
		err  error
		code contract.ErrorCode
		msg  string
	}{
		{"nil", nil, contract.ErrCodeUnspecified, ""},
		{"refusal", Refuse(contract.ErrCodeNotMember, "not a participant of %s", "c1"), contract.ErrCodeNotMember, "not a participant of c1"},
		{"wrapped refusal", fmt.Errorf("writer: %w", Refuse(contract.ErrCodeConflict, "reused")), contract.ErrCodeConflict, "reused"},
		{"corrupt", corrupt, contract.ErrCodeInternal, "stored state unreadable"},
		{"dependency", errors.New("dial tcp 127.0.0.1:6379: connection refused"), contract.ErrCodeUnavailable, "retry"},
		{"deadline", context.DeadlineExceeded, contract.ErrCodeUnavailable, "retry"},
	} {
		if got := CodeOf(tc.err); got != tc.code {
			t.Errorf("%s: CodeOf = %v, want %v", tc.name, got, tc.code)
		}
		if got := ClientMessage(tc.err); !strings.Contains(got, tc.msg) || (tc.msg == "" && got != "") {
			t.Errorf("%s: ClientMessage = %q, want it to contain %q", tc.name, got, tc.msg)
		}
		if tc.err != nil && strings.Contains(ClientMessage(tc.err), "127.0.0.1") {
			t.Errorf("%s: client message leaks an address", tc.name)
		}
	}
}
