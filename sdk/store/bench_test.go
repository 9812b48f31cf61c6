package store

import (
	"path/filepath"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// BenchmarkAddPending is the cost of Send on a durable file store: one BEGIN IMMEDIATE
// transaction with fsync (WAL, synchronous=FULL), a range reservation every 64 sends.
func BenchmarkAddPending(b *testing.B) {
	s, err := Open(ctx, filepath.Join(b.TempDir(), FileName), testIdentity())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := make([]byte, 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.AddPending(ctx, NewPending{NowMs: 1, Peer: peer, Type: contract.MessageText, Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyPullBatch100 is one MAILBOX_BATCH of 100 messages with its cursor, durable.
func BenchmarkApplyPullBatch100(b *testing.B) {
	s, err := Open(ctx, filepath.Join(b.TempDir(), FileName), testIdentity())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	n := uint64(0)
	for i := 0; i < b.N; i++ {
		msgs := make([]Message, 100)
		for j := range msgs {
			n++
			msgs[j] = msg(n, peer)
		}
		if _, err := s.Apply(ctx, Batch{Source: SourcePull, Messages: msgs, Cursor: seqp(n)}); err != nil {
			b.Fatal(err)
		}
	}
}
