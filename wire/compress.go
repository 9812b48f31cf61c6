package wire

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The process shares one zstd decoder and one encoder per level, used only through DecodeAll and
// EncodeAll: those are safe for concurrent use, start no goroutines, and keep their working state
// in an internal pool of GOMAXPROCS entries. A codec per connection was rejected because a
// gateway holds hundreds of thousands of connections and would pay the encoder tables (hundreds
// of KiB each) on every one of them for a feature most messages never use.

// zdecoder refuses, inside zstd itself, to produce more than MaxPayload bytes or to reference a
// window above it, so a zip bomb costs at most MaxPayload of output however it is built.
var zdecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxPayload),
		zstd.WithDecoderMaxWindow(MaxPayload),
	)
	if err != nil {
		panic("wire: zstd decoder options: " + err.Error()) // constant options; cannot happen
	}
	return d
})

// zencoders is indexed by level - SpeedFastest; each is built on first use only.
var zencoders = [...]func() *zstd.Encoder{
	newEncoder(zstd.SpeedFastest),
	newEncoder(zstd.SpeedDefault),
	newEncoder(zstd.SpeedBetterCompression),
	newEncoder(zstd.SpeedBestCompression),
}

func newEncoder(level zstd.EncoderLevel) func() *zstd.Encoder {
	return sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(level),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			// Never emit a window the shared decoder would refuse.
			zstd.WithWindowSize(MaxPayload),
		)
		if err != nil {
			panic("wire: zstd encoder options: " + err.Error()) // constant options; cannot happen
		}
		return e
	})
}

// validLevel maps an unknown level to SpeedFastest, the gateway's default, rather than failing:
// a bad level is a configuration slip that should cost ratio, not the connection.
func validLevel(level zstd.EncoderLevel) zstd.EncoderLevel {
	if level < zstd.SpeedFastest || level > zstd.SpeedBestCompression {
		return zstd.SpeedFastest
	}
	return level
}

// compress writes the zstd encoding of src over dst's backing array and reports whether it is
// worth sending: a compressed form that is not smaller costs the receiver a decompression and
// can even push a maximal message over MaxPayload.
func compress(dst, src []byte, level zstd.EncoderLevel) ([]byte, bool) {
	if len(src) == 0 {
		return dst[:0], false
	}
	out := zencoders[validLevel(level)-zstd.SpeedFastest]().EncodeAll(src, dst[:0])
	return out, len(out) < len(src)
}

// decompress returns src decompressed into a fresh slice the caller owns, refusing output above
// limit. When the zstd frame declares its size, an oversize message is refused before any
// output is allocated; otherwise zstd stops at MaxPayload and the limit is checked after.
func decompress(src []byte, limit int64) ([]byte, error) {
	var zh zstd.Header
	if zh.Decode(src) == nil && zh.HasFCS && zh.FrameContentSize > uint64(limit) {
		n := int64(min(zh.FrameContentSize, math.MaxInt64))
		return nil, &OversizeError{Length: n, Limit: limit, Decompressed: true}
	}
	out, err := zdecoder().DecodeAll(src, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, &OversizeError{Length: limit + 1, Limit: limit, Decompressed: true}
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCompression, err)
	case int64(len(out)) > limit:
		return nil, &OversizeError{Length: int64(len(out)), Limit: limit, Decompressed: true}
	}
	return out, nil
}
