package itest

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"github.com/qim-dev/qim/contract"
)

// userBase makes this process's user ids unlike any other's on a shared stack: a random 32-bit
// prefix above 2^20 ids of its own.
var userBase = func() uint64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return uint64(binary.BigEndian.Uint32(b[:]))<<20 | 1
}()

var userNext atomic.Uint64

// NewUser is a user id no other test of this process, and no other run on a shared stack, uses.
func NewUser() contract.UserID { return contract.UserID(userBase + userNext.Add(1)) }
