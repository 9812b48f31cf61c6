package cqlstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gocql/gocql"
)

// nodeError is an error answer of a node as gocql returns it (gocql.RequestError).
type nodeError int

func (e nodeError) Code() int       { return int(e) }
func (e nodeError) Message() string { return fmt.Sprintf("code %#x", int(e)) }
func (e nodeError) Error() string   { return e.Message() }

// TestRefusedTellsConfigurationFromUnreachable: start-up waits for an archive that may still
// come (no node answering, a node bootstrapping, too few replicas up) and refuses at once what
// only the deployment can fix.
func TestRefusedTellsConfigurationFromUnreachable(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		refused bool
	}{
		{"invalid config", fmt.Errorf("%w: no hosts", ErrConfig), true},
		{"schema not migrated", fmt.Errorf("history archive: %w", &SchemaError{Keyspace: "qim", Want: 3, Have: 0}), true},
		{"not durable", &DurabilityError{D: Durability{Keyspace: "qim", MinReplicas: 1}, Reason: "commitlog_sync periodic"}, true},
		{"bad credentials", nodeError(gocql.ErrCodeCredentials), true},
		{"not authorized", fmt.Errorf("read: %w", nodeError(gocql.ErrCodeUnauthorized)), true},
		{"invalid request", nodeError(gocql.ErrCodeInvalid), true},
		{"no node answers", fmt.Errorf("cqlstore: connect to keyspace qim: %w", gocql.ErrNoConnectionsStarted), false},
		{"bootstrapping", nodeError(gocql.ErrCodeBootstrapping), false},
		{"too few replicas", nodeError(gocql.ErrCodeUnavailable), false},
		{"read timeout", nodeError(gocql.ErrCodeReadTimeout), false},
		{"attempt timed out", fmt.Errorf("read the replication: %w", context.DeadlineExceeded), false},
		{"unknown", errors.New("EOF"), false},
	}
	for _, tc := range cases {
		if got := Refused(tc.err); got != tc.refused {
			t.Errorf("%s: Refused(%v) = %v, want %v", tc.name, tc.err, got, tc.refused)
		}
	}
}
