package capiit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/svc"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// sdkDir is the SDK module, relative to this package.
const sdkDir = "../../sdk"

// TestCProgram: the C program passes on the real stack with 10,000 send-commit-receive cycles
// and ends with no buffer outstanding.
func TestCProgram(t *testing.T) {
	ep := itest.Endpoints(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc is required to build the C program (scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := t.TempDir()
	set := svc.StartForTest(ctx, t, "../..", ep)
	chat := build(ctx, t, dir)
	runChat(ctx, t, set, chat, dir, 10000)
}

// TestCArchiveLinks: the static build (-buildmode=c-archive) links the C program into one
// executable, for platforms that ship no shared libraries (iOS). The shared build above runs it.
func TestCArchiveLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the SDK as a C archive")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	itest.Command(ctx, t, sdkDir, nil, "go", "build", "-buildmode=c-archive", "-o", filepath.Join(out, "libqim.a"), "./capi")
	capi, err := filepath.Abs(filepath.Join(sdkDir, "capi"))
	if err != nil {
		t.Fatal(err)
	}
	chat := filepath.Join(out, "chat")
	itest.Command(ctx, t, out, nil, "gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", capi, "-o", chat,
		filepath.Join(capi, "example", "chat.c"), filepath.Join(out, "libqim.a"), "-lpthread", "-lm")
	// Without arguments it prints its usage and exits 2: the runtime started and main ran.
	cmd := exec.CommandContext(ctx, chat)
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("the statically linked program: %v, want exit status 2 (usage)", err)
	}
}

// TestAPIUnderTheRaceDetector runs the library's concurrency test (many threads opening,
// polling, sending and closing at once) with -race. A C program cannot load a -race libqim:
// ThreadSanitizer fails to map the shadow of a c-shared Go heap ("failed to allocate ...
// (errno: 12)", seen here), so the Go side is checked from Go.
func TestAPIUnderTheRaceDetector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the SDK with the race detector")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := itest.Command(ctx, t, sdkDir, nil, "go", "test", "-race", "-count=1", "-v", "-run", "^TestConcurrentHandles$", "./capi")
	if !strings.Contains(out, "--- PASS: TestConcurrentHandles") {
		t.Fatalf("the concurrency test did not pass under -race:\n%s", out)
	}
}

// build makes libqim.so and the C program in out, after checking qim.h against the header
// cgo generates.
func build(ctx context.Context, t *testing.T, out string) string {
	t.Helper()
	itest.Command(ctx, t, sdkDir, nil, "go", "build", "-buildmode=c-shared", "-o", filepath.Join(out, "libqim.so"), "./capi")
	capi, err := filepath.Abs(filepath.Join(sdkDir, "capi"))
	if err != nil {
		t.Fatal(err)
	}
	check := filepath.Join(out, "check.c")
	if err := os.WriteFile(check, []byte("#include \"libqim.h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	itest.Command(ctx, t, out, nil, "gcc", "-fsyntax-only", "-I", capi, "-I", out, check)
	chat := filepath.Join(out, "chat")
	itest.Command(ctx, t, out, nil, "gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", capi, "-o", chat,
		filepath.Join(capi, "example", "chat.c"), "-L", out, "-lqim")
	return chat
}

// runChat runs the C program for two fresh users and requires its OK line.
func runChat(ctx context.Context, t *testing.T, set *svc.Set, chat, out string, cycles int) {
	t.Helper()
	a, b := newUser(), newUser()
	env := []string{"LD_LIBRARY_PATH=" + out, "PATH=" + os.Getenv("PATH"),
		"CHAT_TOKEN_A=" + set.DevToken(t, a, "c-"+strconv.FormatUint(uint64(a), 10)),
		"CHAT_TOKEN_B=" + set.DevToken(t, b, "c-"+strconv.FormatUint(uint64(b), 10))}
	stdout := itest.Command(ctx, t, out, env, chat, set.Addrs.GatewayTCP, filepath.Join(out, "data"),
		strconv.FormatUint(uint64(a), 10), strconv.FormatUint(uint64(b), 10), strconv.Itoa(cycles))
	t.Logf("%s", stdout)
	if !strings.Contains(stdout, "chat: OK, 0 buffers outstanding") {
		t.Fatalf("the C program did not report OK:\n%s", stdout)
	}
}

func newUser() contract.UserID { return itest.NewUser() }
