package luascript

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/lua-scripts.md from the scripts' headers")

const scriptsDoc = "../../../docs/lua-scripts.md"

// docs/lua-scripts.md shows, for every script of the services, the prologue the loader puts
// before it: the one piece of Lua Redis runs that no .lua file holds. It is generated from the
// headers; this test fails when it is stale (go test ./services/internal/luascript -update).
func TestScriptsDocIsGenerated(t *testing.T) {
	want, err := scriptsDocText("../..")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(scriptsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(scriptsDoc)
	if err != nil || string(have) != want {
		t.Fatalf("%s is stale (%v): run go test ./services/internal/luascript -run TestScriptsDocIsGenerated -update", scriptsDoc, err)
	}
}

// scriptsDocText renders the doc for every lua/*.lua under root (the services) that opens with a
// header.
func scriptsDocText(root string) (string, error) {
	var b strings.Builder
	b.WriteString(`# The Lua scripts and the prologue Redis runs before each

Generated from each script's ` + "`--!`" + ` header by
` + "`go test ./services/internal/luascript -run TestScriptsDocIsGenerated -update`" + `; do not edit.

Redis runs, as one EVALSHA, the prologue below, then
[base.lua](../services/internal/luascript/base.lua), then the store's ` + "`lua/prelude.lua`" + `
(when it has one), then the script file byte for byte. The prologue binds the header's names as
plain locals: ` + "`K_name`" + ` and ` + "`A_name`" + ` for ` + "`KEYS[i]`" + ` and ` + "`ARGV[i]`" + `, arrays for
a repeated tail, ` + "`ARITY`" + ` (the counts fit the header) and ` + "`reply`" + ` (builds the reply
from named fields in header order). An error Redis reports at a line of this assembled source is
returned by luascript with the file and line it is in appended, e.g. ` + "`(at pull.lua:12)`" + `.
Why: [ADR-0018](adr/0018-lua-script-interface-header.md).
`)
	repo, err := filepath.Abs("../../..")
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".lua" || filepath.Base(filepath.Dir(path)) != "lua" {
			return err
		}
		if strings.Contains(filepath.ToSlash(path), "internal/luascript/") {
			return nil // this package's own test script
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(src), headerMark) {
			return err
		}
		iface, _, err := parseHeader(string(src))
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, abs)
		if err != nil {
			return err
		}
		b.WriteString("\n## [" + filepath.ToSlash(rel) + "](../" + filepath.ToSlash(rel) + ")\n\n```lua\n")
		b.WriteString(prologue(filepath.Base(path), iface))
		b.WriteString("```\n")
		return nil
	})
	return b.String(), err
}
