// Package config loads a service's configuration from QIM_* environment variables into one
// struct, and describes that struct for --help and docs/config.md, so the loader, the help text
// and the reference cannot drift apart.
//
// A service declares its configuration once:
//
//	type Config struct {
//		// BatchMax trades ... (the field comment keeps the trade-off).
//		BatchMax int `env:"QIM_WRITER_BATCH_MAX" unit:"sends" doc:"sends carried by one Redis pipeline"`
//	}
//
// and its defaults once, as Go values (so a default can be a contract constant instead of a
// copy of its number): a func returning a Config with every non-zero default set. Tags:
//
//   - env: the variable's name (required on every leaf field).
//   - doc: one line for --help and docs/config.md.
//   - unit: what a number counts ("sends", "bytes"); durations need none, they are Go durations.
//   - required:"true": no default; unset or empty is an error naming the variable.
//   - secret:"true": the value never appears in an error or in the docs. A secret QIM_X can
//     also be given as a file: QIM_X_FILE names it (secretfile.go); setting both is an error.
//   - default: display text for a default that is derived at Validate time (e.g. "2.5 × interval").
//
// Supported field types: string, bool, signed and unsigned integers, float64, time.Duration (Go
// syntax: "150ms", "2s"), []string (comma-separated), pointers to those (nil = unset, for values
// whose zero is meaningful), and types implementing encoding.TextUnmarshaler. Nested structs
// without an env tag are walked.
//
// What it must never do: print a secret, accept a malformed value, or read an ambiguous zero. A
// bool always defaults to false (so unset and false mean the same), and an explicit zero for a
// field whose default is not zero is an error, because Validate could not tell it from "unset".
package config
