package commitlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// testCtx is a per-test deadline generous enough for a loaded 2-core machine.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// messageKey is a valid, distinct 16-byte message_id for record i of a run.
func messageKey(t testing.TB, run uint16, i int) []byte {
	t.Helper()
	id, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(i), 1, run)
	if err != nil {
		t.Fatal(err)
	}
	b := contract.U128(id).Bytes()
	return b[:]
}

// runID distinguishes this run's records from earlier ones on the shared topics.
func runID(t testing.TB) uint16 {
	t.Helper()
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return uint16(b[0])<<8 | uint16(b[1])
}

func uniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// pollUntil polls c until n records arrived or ctx ends.
func pollUntil(t testing.TB, ctx context.Context, c *PartitionConsumer, n int) []Record {
	t.Helper()
	var out []Record
	for len(out) < n {
		recs, err := c.Poll(ctx, n-len(out))
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}
