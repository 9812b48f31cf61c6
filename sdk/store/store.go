package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/qim-dev/qim/contract"
)

// FileName is the database file inside a store directory.
const FileName = "qim.sqlite3"

// Identity is whose data a store holds. It is written into the database on creation and checked
// on every open, so a store can never be read as another account's.
type Identity struct {
	// EndpointScope is contract.EndpointScope of the canonical endpoint (32 hex digits).
	EndpointScope string
	Tenant        contract.TenantID
	User          contract.UserID
}

func (id Identity) validate() error {
	if len(id.EndpointScope) != 32 || strings.Trim(id.EndpointScope, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: endpoint scope must be 32 lowercase hex digits", ErrInvalid)
	}
	if id.User == 0 {
		return fmt.Errorf("%w: user id must not be zero", ErrInvalid)
	}
	return nil
}

// Path is the stable store path: dataDir/<endpoint scope>/<tenant, 32 hex>/<user>/qim.sqlite3.
// No token or address enters the path (the scope is a hash of the canonical endpoint), and the
// same account on the same endpoint always finds the same file across restarts and upgrades.
func Path(dataDir string, id Identity) (string, error) {
	if dataDir == "" || !filepath.IsAbs(dataDir) {
		return "", fmt.Errorf("%w (got %q)", ErrNoDataDir, dataDir)
	}
	if err := id.validate(); err != nil {
		return "", err
	}
	return filepath.Join(dataDir, id.EndpointScope, id.Tenant.String(),
		strconv.FormatUint(uint64(id.User), 10), FileName), nil
}

// Store is one account's local database. Its methods are safe for concurrent use; every write is
// one SQLite transaction started with BEGIN IMMEDIATE (the write lock is taken up front, so two
// writers never deadlock upgrading a read lock).
type Store struct {
	db      *sql.DB
	id      Identity
	install contract.U128
	path    string
	ord     ordinalRange
	closed  atomic.Bool
}

// Open opens (creating if needed) the store at path, which must come from Path. WAL with
// synchronous=FULL makes a committed transaction durable before Commit returns: the cursor is
// advanced in that transaction, so it must not outlive a power cut that loses the messages.
func Open(ctx context.Context, path string, id Identity) (*Store, error) {
	if path == "" || !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w (store path %q)", ErrNoDataDir, path)
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("%w: store path must not contain '?' or '#'", ErrInvalid)
	}
	if err := id.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory: %w", err)
	}
	dsn := path + "?_txlock=immediate&_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL"
	return open(ctx, dsn, path, id)
}

func open(ctx context.Context, dsn, path string, id Identity) (*Store, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	// One connection: SQLite serialises writers anyway, an in-memory database exists per
	// connection, and a single connection makes "no statement outside the transaction" a
	// deadlock the tests would see at once instead of a rare SQLITE_BUSY.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	s := &Store{db: db, id: id, path: path}
	if err := s.init(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// init creates the schema on first open and checks identity and version on every open.
func (s *Store) init(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return fmt.Errorf("store: read schema version: %w", err)
		}
		switch {
		case version == 0:
			return s.create(ctx, tx)
		case version > schemaVersion:
			return fmt.Errorf("%w: database has version %d, this SDK knows %d", ErrSchema, version, schemaVersion)
		case version < schemaVersion:
			if err := migrate(ctx, tx, version); err != nil {
				return err
			}
		}
		return s.checkIdentity(ctx, tx)
	})
}

// migrate upgrades a database of version from to schemaVersion inside the opening transaction:
// a crash mid-way leaves the old version, never a half-migrated one.
func migrate(ctx context.Context, tx *sql.Tx, from int) error {
	for v := from; v < schemaVersion; v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("store: migrate schema %d to %d: %w", v, v+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(schemaVersion)); err != nil {
		return fmt.Errorf("store: record schema version: %w", err)
	}
	return nil
}

func (s *Store) create(ctx context.Context, tx *sql.Tx) error {
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("store: create schema: %w", err)
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("store: install id: %w", err)
	}
	install, _ := contract.U128FromBytes(raw[:])
	if install.IsZero() {
		install.Lo = 1
	}
	now := time.Now().UnixMilli()
	tenant := s.id.Tenant.Bytes()
	ib := install.Bytes()
	stmts := []struct {
		q    string
		args []any
	}{
		{"INSERT INTO meta VALUES (1, ?, ?, ?, ?, ?)", []any{s.id.EndpointScope, tenant[:], i64(uint64(s.id.User)), ib[:], now}},
		{"INSERT INTO cursor VALUES (1, 0, 1, ?, '')", []any{now}},
		{"INSERT INTO ordinals VALUES (1, 0)", nil},
		{"PRAGMA user_version = " + strconv.Itoa(schemaVersion), nil},
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return fmt.Errorf("store: initialise: %w", err)
		}
	}
	s.install = install
	return nil
}

func (s *Store) checkIdentity(ctx context.Context, tx *sql.Tx) error {
	var scope string
	var tenant, install []byte
	var user int64
	err := tx.QueryRowContext(ctx, "SELECT endpoint_scope, tenant, user_id, install_id FROM meta WHERE id = 1").
		Scan(&scope, &tenant, &user, &install)
	if err != nil {
		return fmt.Errorf("%w: read meta: %v", ErrSchema, err)
	}
	t, terr := contract.U128FromBytes(tenant)
	in, ierr := contract.U128FromBytes(install)
	if terr != nil || ierr != nil || in.IsZero() {
		return fmt.Errorf("%w: malformed meta row", ErrSchema)
	}
	if scope != s.id.EndpointScope || t != s.id.Tenant || contract.UserID(user) != s.id.User {
		return fmt.Errorf("%w: it holds user %d of tenant %s at endpoint scope %s", ErrIdentity, uint64(user), t, scope)
	}
	s.install = in
	return nil
}

// Close closes the database. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Path returns the database path ("" for a test store in memory).
func (s *Store) Path() string { return s.path }

// Identity returns whose data the store holds.
func (s *Store) Identity() Identity { return s.id }

// InstallID is the random per-store id that client_message_ids are derived from.
func (s *Store) InstallID() contract.U128 { return s.install }

// tx runs fn in one write transaction (BEGIN IMMEDIATE through the DSN's _txlock).
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// errNoRow adapts sql.ErrNoRows for callers that treat "absent" as a normal answer.
func errNoRow(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// ordinalRange is the part of the durable ordinal range this process holds in memory.
type ordinalRange struct {
	mu        sync.Mutex
	next, end uint64 // next ordinal to use; end of the reserved range (exclusive)
}

// i64 stores a u64 as its two's-complement int64 (SQLite INTEGER is signed).
func i64(u uint64) int64 { return int64(u) }
