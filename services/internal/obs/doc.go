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
package obs
