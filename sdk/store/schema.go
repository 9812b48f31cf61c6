package store

// schemaVersion is PRAGMA user_version of a database this package created. A database with a
// higher version was written by a newer SDK and is refused rather than misread; a lower one is
// migrated forward in the transaction that opens it (migrations).
const schemaVersion = 4

// schema creates the current version. Every table that holds one row has a CHECK (id = 1), so a
// bug can never create a second cursor or a second ordinal range. Columns added by a migration
// are appended last here too, so a created and a migrated table have the same column order (the
// INSERTs are positional).
var schema = []string{
	`CREATE TABLE meta (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		endpoint_scope TEXT NOT NULL,
		tenant BLOB NOT NULL,
		user_id INTEGER NOT NULL,
		install_id BLOB NOT NULL,
		created_at_ms INTEGER NOT NULL)`,
	`CREATE TABLE cursor (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		mailbox_seq INTEGER NOT NULL CHECK (mailbox_seq >= 0),
		generation INTEGER NOT NULL,
		updated_at_ms INTEGER NOT NULL,
		last_reset_reason TEXT NOT NULL)`,
	`CREATE TABLE ordinals (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		reserved_to INTEGER NOT NULL CHECK (reserved_to >= 0))`,
	`CREATE TABLE messages (
		message_id BLOB PRIMARY KEY,
		conversation_id BLOB NOT NULL,
		conversation_seq INTEGER NOT NULL,
		sender INTEGER NOT NULL,
		message_type INTEGER NOT NULL,
		custom_type TEXT NOT NULL,
		has_body INTEGER NOT NULL,
		body BLOB NOT NULL,
		client_message_id BLOB,
		sent_at_ms INTEGER NOT NULL,
		flags INTEGER NOT NULL,
		source INTEGER NOT NULL,
		stored_at_ms INTEGER NOT NULL,
		UNIQUE (conversation_id, conversation_seq)) WITHOUT ROWID`,
	`CREATE UNIQUE INDEX messages_cmid ON messages(client_message_id) WHERE client_message_id IS NOT NULL`,
	`CREATE TABLE conversations (
		conversation_id BLOB PRIMARY KEY,
		kind INTEGER NOT NULL,
		peer_user INTEGER NOT NULL,
		latest_seq INTEGER NOT NULL,
		latest_message_id BLOB,
		last_activity_ms INTEGER NOT NULL,
		synced_seq INTEGER NOT NULL,
		read_seq INTEGER NOT NULL,
		unread INTEGER NOT NULL,
		unread_exact INTEGER NOT NULL,
		gap_from_seq INTEGER,
		read_sent_seq INTEGER NOT NULL,
		head_seq INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID`,
	`CREATE TABLE pending (
		client_message_id BLOB PRIMARY KEY,
		ordinal INTEGER NOT NULL UNIQUE,
		conversation_id BLOB NOT NULL,
		peer_user INTEGER NOT NULL,
		message_type INTEGER NOT NULL,
		custom_type TEXT NOT NULL,
		body BLOB NOT NULL,
		mentions BLOB NOT NULL,
		created_at_ms INTEGER NOT NULL,
		state INTEGER NOT NULL,
		error_code INTEGER NOT NULL,
		error_text TEXT NOT NULL) WITHOUT ROWID`,
	groupCreatesTable,
	amendmentsTable,
}

// groupCreatesTable holds the CREATE_GROUP requests the server has not confirmed (groups.go).
const groupCreatesTable = `CREATE TABLE group_creates (
		client_request_id BLOB PRIMARY KEY,
		ordinal INTEGER NOT NULL UNIQUE,
		group_id BLOB NOT NULL,
		name TEXT NOT NULL,
		members BLOB NOT NULL,
		created_at_ms INTEGER NOT NULL,
		state INTEGER NOT NULL,
		error_code INTEGER NOT NULL,
		error_text TEXT NOT NULL) WITHOUT ROWID`

// migrations[v] upgrades a database of version v+1 to v+2.
var migrations = [][]string{
	// 1 → 2: read_sent_seq, the read watermark the server has taken into account (readstate.go).
	// It starts equal to read_seq: a version-1 store never sent MARK_READ, but the first login's
	// session-list merge overwrites it with the server's value, and any conversation where the
	// local watermark is higher is then sent. Starting at 0 instead would send one MARK_READ per
	// conversation the user ever wrote in, for watermarks the server already has.
	{
		`ALTER TABLE conversations ADD COLUMN read_sent_seq INTEGER NOT NULL DEFAULT 0`,
		`UPDATE conversations SET read_sent_seq = read_seq`,
	},
	// 2 → 3: groups. head_seq is the seq of latest_message_id, the newest message that may head
	// the session row (CONTROL messages never do by themselves, so it can trail latest_seq). A
	// version-2 store never held a CONTROL message, so its head is its latest message.
	// group_creates is the durable CREATE_GROUP queue.
	{
		`ALTER TABLE conversations ADD COLUMN head_seq INTEGER NOT NULL DEFAULT 0`,
		`UPDATE conversations SET head_seq = latest_seq WHERE latest_message_id IS NOT NULL`,
		groupCreatesTable,
	},
	// 3 → 4: amendments (amend.go), the merged recall, edit and delete state of amended
	// messages. A version-3 store never applied one: its messages stay as they were stored.
	{amendmentsTable},
}
