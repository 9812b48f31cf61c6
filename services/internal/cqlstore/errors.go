package cqlstore

import (
	"errors"
	"fmt"

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
