package commitlog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRefusedTellsConfigurationFromUnreachable: start-up waits for what the broker may still
// fix by itself and refuses at once what only the deployment can fix. A refusal wrapped by a
// caller's context stays a refusal.
func TestRefusedTellsConfigurationFromUnreachable(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		refused bool
	}{
		{"topic missing", fmt.Errorf("%w: qim.outbox", ErrTopicMissing), true},
		{"bad config", fmt.Errorf("%w: no brokers", ErrConfig), true},
		{"partition count", &PartitionCountError{Topic: "qim.outbox", Want: 1, Got: 2}, true},
		{"message size", &MessageSizeLimitError{Topic: "qim.outbox", TopicMax: 1, Need: 2}, true},
		{"not compacted", &NotCompactedError{Topic: "qim.presence", Policy: "delete"}, true},
		{"position outside the log", &OffsetOutOfRangeError{Low: 5, High: 9}, true},
		{"start offset", &StartOffsetError{Topic: "qim.dispatch", Want: 3, Got: 4}, true},
		{"authorization", fmt.Errorf("describe: %w", kerr.TopicAuthorizationFailed), true},
		{"wrapped refusal", fmt.Errorf("writer: outbox not ready: %w", &PartitionCountError{}), true},
		{"no brokers listed", errors.New("commitlog: ready: metadata for qim.outbox lists no brokers"), false},
		{"no leader", &PartitionNotReadyError{Topic: "qim.outbox", Leader: -1}, false},
		{"leader moving", &PartitionNotReadyError{Topic: "qim.outbox", Err: kerr.NotLeaderForPartition}, false},
		{"coordinator loading", fmt.Errorf("fetch offsets: %w", kerr.CoordinatorLoadInProgress), false},
		{"attempt timed out", fmt.Errorf("metadata: %w", context.DeadlineExceeded), false},
	}
	for _, tc := range cases {
		if got := Refused(tc.err); got != tc.refused {
			t.Errorf("%s: Refused(%v) = %v, want %v", tc.name, tc.err, got, tc.refused)
		}
	}
}
