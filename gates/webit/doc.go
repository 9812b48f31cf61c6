// Package webit holds the TypeScript SDK (clients/web) to the Go contract and runs it on the real
// stack: it generates the SDK's contract constants (src/gen/contract.ts) and its test vectors
// (test/vectors.json: frames, CRCs, ids and protobuf payloads encoded by the Go encoders), checks
// that the committed copies and the generated protobuf code are current, runs the SDK's unit
// tests under node's test runner, and runs its integration tests (node, WebSocket) and the
// browser app's scenarios (headless Chromium) against the services of this checkout on a stack
// (gates/svc, gates/itest). Those that drive node or Chromium run only with WEBIT_RUN=1, which
// make test sets when it runs this package after the release gates, alone.
//
// Why here: the SDK is an npm package with no Go code, and tests that deploy the servers belong
// to the module that has them, like gates/capiit for the C ABI.
package webit
