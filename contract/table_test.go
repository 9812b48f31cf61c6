package contract

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated docs (docs/contract-constants.md, the generated parts of docs/protocol.md)")

// Every exported constant of constants.go must be in the Constants() table with the same value,
// so the table (and the doc generated from it) can never silently fall behind the code.
func TestConstantTableIsComplete(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "constants.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.IsExported() {
					declared[n.Name] = true
				}
			}
		}
	}
	inTable := map[string]bool{}
	for _, c := range Constants() {
		inTable[snakeToCamel(c.Name)] = true
	}
	for name := range declared {
		if !inTable[name] {
			t.Errorf("constant %s is not in the Constants() table", name)
		}
	}
	if len(Constants()) != len(declared) {
		t.Errorf("table has %d rows, constants.go declares %d", len(Constants()), len(declared))
	}
}

// snakeToCamel maps table names to Go names: lane_count → LaneCount, slo_send_ack_p99 → SLOSendAckP99.
func snakeToCamel(s string) string {
	initialisms := map[string]string{"slo": "SLO", "hlc": "HLC", "fifo": "FIFO", "t": "T", "id": "ID", "rpc": "RPC", "ttl": "TTL"}
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if up, ok := initialisms[part]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func TestConstantsDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Contract constants\n\nGenerated from `contract.Constants()` by `go test ./contract -run TestConstantsDoc -update`; do not edit.\n\n")
	b.WriteString("| name | value | immutable | why |\n| --- | --- | --- | --- |\n")
	for _, c := range Constants() {
		imm := ""
		if c.Immutable {
			imm = "yes"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", c.Name, FormatValue(c.Value), imm, c.Why)
	}
	path := filepath.Join("..", "docs", "contract-constants.md")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != b.String() {
		t.Fatalf("%s is stale or missing (%v): run go test ./contract -run TestConstantsDoc -update", path, err)
	}
}

func TestOpcodeTable(t *testing.T) {
	seen := map[string]bool{}
	for i, info := range Opcodes() {
		if i > 0 && Opcodes()[i-1].Op >= info.Op {
			t.Errorf("opcode table not sorted at %s", info.Name)
		}
		if seen[info.Name] || seen[info.Message] {
			t.Errorf("duplicate name or message %s/%s", info.Name, info.Message)
		}
		seen[info.Name], seen[info.Message] = true, true
		switch info.Op.Family() {
		case 0x01, 0x02, 0x03, 0x04, 0x05, 0x0A, 0x0B:
		default:
			t.Errorf("%s in unknown family %#x", info.Name, info.Op.Family())
		}
		if got, ok := info.Op.Lookup(); !ok || !reflect.DeepEqual(got, info) {
			t.Errorf("lookup of %s failed", info.Name)
		}
	}
	// Frozen values (docs/architecture.md, section 6).
	if OpReadSync != 0x0406 || OpLeaveGroup != 0x0A04 {
		t.Fatal("READ_SYNC or LEAVE_GROUP renumbered")
	}
	if info, _ := OpReadSync.Lookup(); info.Served {
		t.Fatal("READ_SYNC is intentionally unimplemented in phase one")
	}
	if !OpPong.IsControl() || OpMailboxBatch.IsControl() {
		t.Fatal("PONG must overtake data chunks; MAILBOX_BATCH must not")
	}
	if Opcode(0x7777).String() != "OPCODE(0x7777)" {
		t.Fatal("unknown opcode string")
	}
}

func TestErrorTable(t *testing.T) {
	required := []string{"UNAUTHORIZED", "PAYLOAD_TOO_LARGE", "RATE_LIMITED", "NOT_MEMBER", "CURSOR_EXPIRED",
		"MAILBOX_DIRTY", "INVALID_ARGUMENT", "CONFLICT", "UNAVAILABLE", "INTERNAL"}
	names := map[string]ErrorCode{}
	for _, e := range ErrorCodes() {
		if e.Code == ErrCodeUnspecified {
			t.Errorf("%s uses the unspecified code 0", e.Name)
		}
		names[e.Name] = e.Code
	}
	for _, n := range required {
		if _, ok := names[n]; !ok {
			t.Errorf("error code %s missing", n)
		}
	}
}

// The immutable constants must break the build when changed. Compile the package with one value
// swapped through an overlay and expect the compiler to refuse it.
func TestGuardsRejectChangedImmutables(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package several times")
	}
	src, err := os.ReadFile("constants.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range [][2]string{
		{"LaneCount = 64", "LaneCount = 32"},
		{"VirtualBucketCount = 65536", "VirtualBucketCount = 65535"},
		{"LogOffsetBits  = 48", "LogOffsetBits  = 47"},
		{"MessageSeqBucketWidth = 1024", "MessageSeqBucketWidth = 1000"},
	} {
		if !strings.Contains(string(src), sub[0]) {
			t.Fatalf("constants.go no longer contains %q", sub[0])
		}
		dir := t.TempDir()
		changed := filepath.Join(dir, "constants.go")
		if err := os.WriteFile(changed, []byte(strings.Replace(string(src), sub[0], sub[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs("constants.go")
		overlay := filepath.Join(dir, "overlay.json")
		_ = os.WriteFile(overlay, []byte(fmt.Sprintf(`{"Replace":{%q:%q}}`, abs, changed)), 0o644)
		out, err := exec.Command("go", "build", "-overlay", overlay, ".").CombinedOutput()
		if err == nil {
			t.Errorf("changing %q to %q still compiles", sub[0], sub[1])
		} else if !strings.Contains(string(out), "guards.go") {
			t.Errorf("%q: build failed, but not in guards.go:\n%s", sub[1], out)
		}
	}
}
