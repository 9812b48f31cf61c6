// Package admin is the admin API: HTTP/JSON for operators and product backends, beside the
// internal gRPC. Every call is authenticated with an API key whose scopes name what it may do,
// and every call is written to the audit log (who, what, on whom, the outcome; never a key or a
// token). The OpenAPI document (docs/admin-api.json) is generated from the route table, so the
// documented API is the served one (TestOpenAPIDocIsGenerated).
//
// Invariants:
//   - A request without a valid key gets 401, a key without the route's scope 403, before the
//     body is read; the key is compared by its SHA-256, in constant time.
//   - A change is answered 2xx only once it is stored (a revocation is in the core Redis).
//
// Rejected alternative: the admin surface on the gateway's client port or its /metrics listener.
// Operators' keys and product backends would share a port with the internet-facing protocol or
// the scrape endpoint, and every gateway would carry the admin role.
package admin
