// Package sdkit holds the Go SDK's integration tests: the sdk package against the real services
// (the qim binary built from this checkout, one process per service via gates/svc) on a real
// Redis + Kafka stack (gates/itest). No mocks: every message goes through gateway → writer →
// Outbox → fanout → dispatch log → mailbox.
//
// Why here and not in sdk/: the SDK is its own module (ADR-0031) so that a product importing it
// does not inherit the servers' and the harness's module graph; tests that deploy the servers
// belong to the module that has them. The SDK's unit tests (fake gateway, fake store) stay in
// sdk/.
package sdkit
