package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

func TestPrintableNeutralisesTerminalControl(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello", "hello"},
		{"中文 ok", "中文 ok"},
		{"\x1b[2Jwipe", "?[2Jwipe"},
		{"bell\a", "bell?"},
		{"bad\xffutf8", "bad?utf8"},
	}
	for _, tc := range tests {
		if got := printable([]byte(tc.in)); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// buildDir holds the test binary; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// binary builds qim-desktop once for the process tests.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qim-desktop-test-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildDir = dir
		buildOnce.bin = filepath.Join(dir, "qim-desktop")
		out, err := exec.Command("go", "build", "-o", buildOnce.bin, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = &buildError{err, string(out)}
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// startDesktop runs the binary with a stdin the test keeps open: the process must exit on its own.
func startDesktop(t *testing.T, gateway string) (*exec.Cmd, *os.File, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary(t), "--gateway", gateway, "--user", "7", "--device", "d1", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "QIM_TOKEN=test-token")
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	t.Cleanup(func() { stdinW.Close(); _ = cmd.Process.Kill() })
	return cmd, stdinW, out
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration, out *syncBuffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, out.String())
		}
	case <-time.After(within):
		t.Fatalf("still running %v later although stdin is open (the hang docs/adr/0014-desktop-exits-with-os-exit.md is about); output:\n%s", within, out.String())
	}
}

func TestQuitExitsPromptlyWithStdinOpen(t *testing.T) {
	cmd, stdin, out := startDesktop(t, "127.0.0.1:1")
	if _, err := stdin.WriteString("/pending\n/quit\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 5*time.Second, out)
	if !strings.Contains(out.String(), "0 pending") || !strings.Contains(out.String(), "bye") {
		t.Fatalf("output:\n%s", out.String())
	}
}

// A replaced device (KICKED{REPLACED}) exits by itself, stdin still open.
func TestKickExitsPromptly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r, w := wire.NewReader(conn), wire.NewWriter(conn)
		defer w.Close()
		for {
			m, err := r.ReadMessage()
			if err != nil {
				return
			}
			if m.Opcode == contract.OpAuth {
				send(w, contract.OpAuthOK, m.RequestID, &qimv1.AuthOk{UserId: 7, SessionEpoch: 1})
				send(w, contract.OpKicked, 0, &qimv1.Kicked{Reason: uint32(contract.KickReplaced), Detail: "replaced"})
			}
		}
	}()
	cmd, stdin, out := startDesktop(t, ln.Addr().String())
	if _, err := stdin.WriteString("/login\n"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 10*time.Second, out)
	if !strings.Contains(out.String(), "[kicked]") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func send(w *wire.Writer, op contract.Opcode, id uint32, m proto.Message) {
	b, _ := proto.Marshal(m)
	_ = w.Send(context.Background(), wire.Message{Opcode: op, RequestID: id, Payload: b})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
