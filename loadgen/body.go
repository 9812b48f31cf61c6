package loadgen

import (
	"encoding/binary"
	"errors"
)

// Body layout of every loadgen message (big-endian), so the RECIPIENT measures end to end from
// the bytes it received and attributes the message to a (sender, ordinal) without any shared
// state with the sender:
//
//	offset size field
//	0      8    run id       random per run; a message of another run is foreign
//	8      8    sent at      sender wall clock when the SEND frame was handed to the socket, Unix µs
//	16     4    sender       index of the sending connection in the run
//	20     4    reserved     zero
//	24     8    ordinal      per-sender counter, 0, 1, 2, ...
//	32     ...  filler       up to Config.BodyBytes, zero
//
// Sender and receiver share a clock (one process, one machine); a loadgen on another host than
// its receivers would need clock sync, which is why both sides of every pair live here.
const bodyHeaderBytes = 32

// errForeignBody is returned for bodies that are not from a loadgen run.
var errForeignBody = errors.New("loadgen: body is not a loadgen body")

type bodyHeader struct {
	run     uint64
	sentUs  int64
	sender  uint32
	ordinal uint64
}

// putBody writes h into b (len(b) ≥ bodyHeaderBytes); the filler is left as it is.
func putBody(b []byte, h bodyHeader) {
	binary.BigEndian.PutUint64(b[0:], h.run)
	binary.BigEndian.PutUint64(b[8:], uint64(h.sentUs))
	binary.BigEndian.PutUint32(b[16:], h.sender)
	binary.BigEndian.PutUint32(b[20:], 0)
	binary.BigEndian.PutUint64(b[24:], h.ordinal)
}

func parseBody(b []byte) (bodyHeader, error) {
	if len(b) < bodyHeaderBytes {
		return bodyHeader{}, errForeignBody
	}
	return bodyHeader{
		run:     binary.BigEndian.Uint64(b[0:]),
		sentUs:  int64(binary.BigEndian.Uint64(b[8:])),
		sender:  binary.BigEndian.Uint32(b[16:]),
		ordinal: binary.BigEndian.Uint64(b[24:]),
	}, nil
}
