package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The generated parts of docs/protocol.md. Each sits between
// "<!-- BEGIN GENERATED: name -->" and "<!-- END GENERATED -->"; the prose around them is
// hand-written. Every test named TestProtocolDoc* checks one part and rewrites it under -update,
// so `go test ./contract -run TestProtocolDoc -update` regenerates them all.

var protocolDocPath = filepath.Join("..", "docs", "protocol.md")

const generatedEnd = "<!-- END GENERATED -->"

// CheckProtocolDocSection fails t when the generated part name of docs/protocol.md differs from
// body, or rewrites it under -update. It is exported for the external test package, which
// builds the frame examples with the wire codec (this package may not import it).
func CheckProtocolDocSection(t *testing.T, name, body string) {
	t.Helper()
	raw, err := os.ReadFile(protocolDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin := "<!-- BEGIN GENERATED: " + name + " -->\n"
	i := strings.Index(doc, begin)
	if i < 0 {
		t.Fatalf("%s has no %q marker", protocolDocPath, strings.TrimSpace(begin))
	}
	start := i + len(begin)
	n := strings.Index(doc[start:], generatedEnd)
	if n < 0 {
		t.Fatalf("%s: generated part %s has no end marker", protocolDocPath, name)
	}
	if doc[start:start+n] == body {
		return
	}
	if !*update {
		t.Fatalf("the generated part %q of %s is stale: run go test ./contract -run TestProtocolDoc -update", name, protocolDocPath)
	}
	doc = doc[:start] + body + doc[start+n:]
	if err := os.WriteFile(protocolDocPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

var directionText = map[Direction]string{Uplink: "client → server", Downlink: "server → client", Both: "both"}

func TestProtocolDocOpcodes(t *testing.T) {
	var b strings.Builder
	b.WriteString("| value | name | direction | control | payload (`qim.v1`) | served | this server version |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, o := range Opcodes() {
		fmt.Fprintf(&b, "| `0x%04X` | %s | %s | %s | `%s` | %s | %s |\n", uint16(o.Op), o.Name, directionText[o.Direction],
			yes(o.Control), o.Message, map[bool]string{true: "yes", false: "**no**"}[o.Served], cell(o.Note))
	}
	CheckProtocolDocSection(t, "opcodes", b.String())
}

func TestProtocolDocErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("| code | name | retryable | last frame before a close | sent by this server version for | meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, e := range ErrorCodes() {
		var closing []string
		for _, pc := range ProtocolCases() {
			if pc.Reply == OpError && pc.Error == e.Code && pc.Closes {
				closing = append(closing, "`"+pc.Name+"`")
			}
		}
		closes := "never"
		if len(closing) > 0 {
			closes = "only in " + strings.Join(closing, ", ")
		}
		sent := e.SentBy
		if sent == "" {
			sent = "**not sent** (reserved; handle it anyway)"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", e.Code, e.Name, yes(e.Retryable), closes, cell(sent), cell(e.Meaning))
	}
	CheckProtocolDocSection(t, "errors", b.String())
}

func TestProtocolDocConnectionCases(t *testing.T) {
	var b strings.Builder
	b.WriteString("| case | when | condition | the server sends | then | the client should |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, pc := range ProtocolCases() {
		sends := "nothing"
		switch pc.Reply {
		case OpError:
			sends = "ERROR " + pc.Error.String()
		case OpKicked:
			sends = "KICKED " + pc.Kick.String()
		}
		then := "connection stays open"
		if pc.Closes {
			then = "**closes**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", pc.Name, pc.Phase, cell(pc.When), sends, then, cell(pc.Client))
	}
	CheckProtocolDocSection(t, "connection-cases", b.String())
}
