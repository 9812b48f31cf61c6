// Package capiit runs the C ABI of the Go SDK (sdk/capi) as a C application would: it builds
// libqim with -buildmode=c-shared, compiles the C program sdk/capi/example/chat.c against
// qim.h with gcc, and runs it on the real services and stack (gates/svc, gates/itest): a
// message A to B, B's session list, history and read watermark, a room event read live, a
// group created, messaged, listed and left, refusals, then thousands of send-commit-receive
// cycles with every buffer freed (qim_outstanding() 0 at the end). The library's own
// concurrency test runs under the Go race detector beside it.
//
// It also holds the hand-written qim.h to the exported functions: the header cgo generates
// declares them again after including qim.h, so a prototype that drifted fails to compile.
//
// Why here: the SDK is a module of its own (ADR-0031) and must not depend on the harness;
// tests that deploy the servers belong to the module that has them, like gates/sdkit.
package capiit
