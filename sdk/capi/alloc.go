package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// outstanding counts buffers handed to C and not yet freed with qim_free (qim_outstanding).
var outstanding atomic.Int64

// cString copies s into a C buffer the caller frees with qim_free.
func cString(s string) *C.char {
	outstanding.Add(1)
	return C.CString(s)
}

// setOut stores a copy of s in *out when out is not NULL.
func setOut(out **C.char, s string) {
	if out != nil {
		*out = cString(s)
	}
}

// clearOut makes *out NULL when out is not NULL, so a failed call leaves no stale pointer.
func clearOut(out **C.char) {
	if out != nil {
		*out = nil
	}
}

//export qim_free
func qim_free(p unsafe.Pointer) {
	if p == nil {
		return
	}
	outstanding.Add(-1)
	C.free(p)
}

//export qim_outstanding
func qim_outstanding() C.int64_t { return C.int64_t(outstanding.Load()) }

// goBytes copies n bytes at p (NULL with n 0 is an empty slice).
func goBytes(p *C.uint8_t, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}
