package writer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/failpoint"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// A writer process is SIGKILLed at each stage of the commit; a restarted writer completes every
// commit, and the client's retry gets the ACK of the first intent, whose message_id is in the
// Outbox. This is a real process kill (failpoints build), not a simulated error.
func TestCrashAtEachStageIsRecovered(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills writer processes")
	}
	bin := buildFailpointWriter(t)
	ep := itest.Endpoints(t)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	defer rdb.Close()
	store := msgstore.New(rdb)
	acks := map[uint64]*qimv1.SendAck{}
	for i, fp := range []string{failpoint.WriterAfterReserve, failpoint.WriterAfterRecord, failpoint.WriterAfterOutbox, failpoint.WriterBeforeAck} {
		t.Run(fp, func(t *testing.T) {
			a, b := uniqueUsers(t)
			spec := sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte(fp), messageType: 1}
			out := runKilledWriter(t, bin, ep.RedisCore, ep.KafkaBrokers, fp, spec)
			if out != nil && out.GetAck() != nil {
				t.Fatalf("an ACK escaped a writer killed at %s", fp)
			}
			key := msgstore.CommitKey{Tenant: spec.tenant, Sender: a, Conversation: contract.DirectConversationID(spec.tenant, a, b)}
			cmid, _ := contract.ParseClientMessageID(spec.cmid)
			key.ClientMessageID = cmid
			cm, ok, err := store.LoadCommit(context.Background(), key)
			if err != nil || !ok {
				t.Fatalf("intent not durable after kill at %s: ok=%v err=%v", fp, ok, err)
			}
			if committed := cm.State == msgstore.StateCommitted; committed != (fp == failpoint.WriterBeforeAck) {
				t.Fatalf("killed at %s, commit state %s", fp, cm.State)
			}
			w := startWriter(t, nil) // a fresh writer: its recovery loop must finish the commit
			waitCommitted(t, store, key)
			ack := mustAck(t, w.send(t, spec))
			mid := cm.MessageID.Bytes()
			if ack.GetConversationSeq() != uint64(cm.Seq) || string(ack.GetMessageId()) != string(mid[:]) {
				t.Fatalf("retry after recovery answered another commit: seq %d vs %d", ack.GetConversationSeq(), cm.Seq)
			}
			acks[uint64(i)] = ack
		})
	}
	assertInOutbox(t, acks)
}

func buildFailpointWriter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "qim")
	cmd := exec.Command("go", "build", "-tags", "failpoints", "-o", bin, "github.com/qim-dev/qim/cmd/qim")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build qim with failpoints: %v\n%s", err, out)
	}
	return bin
}

// runKilledWriter starts a writer process armed at fp, sends spec to it and waits for the
// process to die. It returns the outcome if the RPC returned one (it should not be an ACK).
func runKilledWriter(t *testing.T, bin, redisAddr string, brokers []string, fp string, spec sendSpec) *internalv1.SendOutcome {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "writer")
	cmd.Env = append(os.Environ(), "QIM_REDIS_ADDR="+redisAddr, "QIM_KAFKA_BROKERS="+strings.Join(brokers, ","),
		"QIM_WRITER_LISTEN="+addr, "QIM_WRITER_METRICS=127.0.0.1:0", "QIM_FAILPOINT="+fp,
		"QIM_WRITER_RECOVERY_INTERVAL=1h", "QIM_RPC_PLAINTEXT_LOOPBACK=1")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := &testWriter{client: internalv1.NewWriterClient(conn)}
	var out *internalv1.SendOutcome
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		out = trySend(w, spec, 20*time.Second)
	}()
	select {
	case err := <-exited:
		if !strings.Contains(logs.String(), "failpoint: "+fp) {
			t.Fatalf("writer exited (%v) without hitting %s:\n%s", err, fp, logs.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("writer was not killed at %s:\n%s", fp, logs.String())
	}
	<-sent
	return out
}

// trySend retries the first send until the process listens; transport errors return nil.
func trySend(w *testWriter, s sendSpec, within time.Duration) *internalv1.SendOutcome {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := w.client.SendMessage(ctx, sendRequest(s), grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return out
		}
		if strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset") || strings.Contains(err.Error(), "closing") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func waitCommitted(t *testing.T, store *msgstore.Store, key msgstore.CommitKey) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cm, ok, err := store.LoadCommit(context.Background(), key)
		if err == nil && ok && cm.State == msgstore.StateCommitted {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("recovery loop did not complete the commit within 20 s")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr())
}
