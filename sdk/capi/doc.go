// Command capi is the C ABI of the Go SDK: built with -buildmode=c-shared (libqim.so) or
// c-archive (libqim.a), it exports the functions qim.h declares, so an application in C, C++,
// Swift, Kotlin/JNI or any language with a C FFI runs the same SDK core as a Go product: the
// durable local store, pending sends keyed by client_message_id, reconnects with
// reconciliation, exact unread.
//
// Layout: export.go holds the exported functions, each a thin conversion of C arguments around
// a Go function of api.go, groups.go or rooms.go that knows nothing of C (so the tests drive the API
// without cgo); handles.go maps handles to clients; json.go renders results and events;
// alloc.go hands buffers to C and counts them.
//
// Rejected: one exported function and C struct per event type and result. A struct layout is
// an ABI promise in every field, and each new SDK event would add symbols; JSON objects with a
// "type" field grow without breaking anyone, every language parses them, and ids travel as
// strings, as the protocol's u64/u128 rule requires anyway. The cost is one encoding per event,
// small beside the network and the store.
//
// Rejected: callbacks into C for events. A Go-to-C callback runs on a Go-created thread the
// application does not own (trouble for UI toolkits and JNI); a poll call with a timeout
// (qim_next_event) lets the application pick the thread.
package main

// main is required by -buildmode=c-shared and c-archive; it never runs.
func main() {}
