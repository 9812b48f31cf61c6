package cqlstore

import (
	"errors"
	"fmt"

	"github.com/gocql/gocql"

	"github.com/qim-dev/qim/services/internal/rpc"
)

// Sentinels callers branch on.
var (
	// ErrConfig: the configuration cannot work.
	ErrConfig = errors.New("cqlstore: invalid config")
	// ErrInvalid: a row or a read request the store refuses before sending anything.
	ErrInvalid = errors.New("cqlstore: invalid input")
	// ErrCorrupt: the archive holds something a reader must not serve (an index row without its
	// record, a record that does not decode or names another position). The whole read fails.
	// It wraps rpc.ErrCorrupt, so a service answers it INTERNAL (a retry cannot help), never
	// UNAVAILABLE.
	ErrCorrupt = fmt.Errorf("cqlstore: archive corrupt: %w", rpc.ErrCorrupt)
)

// SchemaError: the keyspace's schema is not the one this binary speaks. Want is the version the
// binary needs, Have what the keyspace records (0: never migrated). Newer than Want means a newer
// binary migrated it; older means `qimctl cql migrate` has not been run.
type SchemaError struct {
	Keyspace   string
	Want, Have int
}

func (e *SchemaError) Error() string {
	if e.Have > e.Want {
		return fmt.Sprintf("cqlstore: keyspace %s is at schema version %d, newer than this binary's %d: upgrade the binary",
			e.Keyspace, e.Have, e.Want)
	}
	return fmt.Sprintf("cqlstore: keyspace %s is at schema version %d, this binary needs %d: run `qimctl cql migrate`",
		e.Keyspace, e.Have, e.Want)
}

// Refused reports whether err, returned by Open or CheckDurability at start-up, is a verdict
// that waiting cannot change: an invalid configuration, a schema that is not this binary's, a
// keyspace whose acknowledged writes would not survive a crash, or an answer of the node that
// refuses the request itself (bad credentials, not authorized, invalid or misconfigured). No
// node answering, a node still bootstrapping, a timeout or too few replicas up are not refusals:
// start-up waits for them within a bound (lifecycle.Await).
func Refused(err error) bool {
	var (
		se  *SchemaError
		de  *DurabilityError
		req gocql.RequestError
	)
	switch {
	case errors.Is(err, ErrConfig), errors.As(err, &se), errors.As(err, &de):
		return true
	case errors.As(err, &req):
		switch req.Code() {
		case gocql.ErrCodeCredentials, gocql.ErrCodeUnauthorized, gocql.ErrCodeSyntax,
			gocql.ErrCodeInvalid, gocql.ErrCodeConfig:
			return true
		}
	}
	return false
}
