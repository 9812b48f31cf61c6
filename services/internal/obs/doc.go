// Package obs owns the redaction helpers every Q-IM log line goes through when it touches a
// secret or user content.
//
// The rule: a log line (log, slog, a logger method, or fmt to stderr) that mentions an access
// token, a key, a password, a message body or any other payload must pass it through
// SecretDigest, BodyShape or TextShape first. Logs are shipped to places with weaker access
// control than the message store and are kept longer than the TTL that erases messages, so a body
// or token in a log line outlives the deletion the product promises. The contract lint
// (gates/lint, rule secret-logging) enforces this by name at the call site.
//
// What obs must never do: return, embed or log any byte of its input; use a reversible encoding
// (hex, base64, truncation) as a "redaction"; or keep state between calls (a digest must be the
// same in every process so operators can correlate one token across services).
//
// obs also owns the HTTP endpoints every service exposes (server.go, health.go) and the metric
// registry behind them (metrics.go): /metrics, /healthz and /debug/pprof/. Every Q-IM metric is
// qim_-prefixed, carries service=<name>, and never has a label for a user, message,
// conversation, client message, device or token (one series per id would grow without bound and
// record who talked when). Always-zero invariant counters are registered through
// Registry.Invariant, and /healthz answers 503 while any of them is non-zero or while the
// service's readiness check fails. The endpoints must never echo a credential (readiness errors
// are masked; /debug/pprof/cmdline is not served) and must never report healthy without having
// run the service's real readiness check.
package obs
