package luascript

import (
	"fmt"
	"regexp"
	"strings"
)

// The loader runs every file as written, so what the compiler of names used to refuse is now
// refused by reading the text: a few regular expressions over each file, at load, which runs at
// package initialisation. They read comments and strings too; a script that needs one of these
// words in a comment can say it another way. Rejected: keeping a Lua lexer to tell code from
// comments (the code this replaced): 340 lines for files that never needed the distinction.
var (
	positionalRE = regexp.MustCompile(`\b(KEYS|ARGV)\b`)
	oldNameRE    = regexp.MustCompile(`\b[KA]\.[a-z]`)
	nameRE2      = regexp.MustCompile(`\b([KA])_([A-Za-z0-9_]+)\b`)
	assignRE     = regexp.MustCompile(`\b([KA]_[A-Za-z0-9_]+|ARITY|reply)\s*=([^=]|$)`)
	arrayReplyRE = regexp.MustCompile(`\breturn\s*\{`)
	sharedRE     = regexp.MustCompile(`\b([KA]_[A-Za-z0-9_]+|ARITY)\b`)
	// Binders: a local list, a function's name and parameters, a loop's variables.
	localRE    = regexp.MustCompile(`\blocal\s+(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)`)
	functionRE = regexp.MustCompile(`\bfunction\s*([A-Za-z0-9_.:]*)\s*\(([^)]*)\)`)
	forRE      = regexp.MustCompile(`\bfor\s+([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?:=|\bin\b)`)
)

// checkSource refuses Lua that would bypass the header in src, a file the loader puts after the
// prologue (base.lua, a store's prelude, or the script file when body is true): KEYS or ARGV
// used at all; the old K.name dialect; an assignment to a prologue name (K_name, A_name, ARITY,
// reply) or a rebinding of one; "return {" (an array reply built by position). In a script file
// it also refuses a K_ or A_ name its header does not declare. base.lua and a prelude may not
// read K_ or A_ names or ARITY at all: they are shared by scripts of different headers, and a
// helper that read a prologue local would capture it as an upvalue each time the chunk runs
// (about 2 µs per reserve_and_record call inside Redis, ADR-0018), so helpers take the values
// as parameters. firstLine is the file line of src's first line, for messages.
func checkSource(iface Interface, src string, body bool, firstLine int) error {
	for i, line := range strings.Split(src, "\n") {
		if err := checkLine(iface, line, body); err != nil {
			return fmt.Errorf("line %d: %w", firstLine+i, err)
		}
	}
	return nil
}

func checkLine(iface Interface, line string, body bool) error {
	if m := positionalRE.FindString(line); m != "" {
		return fmt.Errorf("%s used directly; use the header's names (K_name, A_name)", m)
	}
	if m := oldNameRE.FindString(line); m != "" {
		return fmt.Errorf("%q: the prologue binds K_name and A_name, not tables", m)
	}
	if m := assignRE.FindStringSubmatch(line); m != nil {
		return fmt.Errorf("%s assigned: the prologue's names are read-only", m[1])
	}
	if arrayReplyRE.MatchString(line) {
		return fmt.Errorf("return {...} builds a reply by position; use reply{name = value}")
	}
	for _, n := range bound(line) {
		if isPrologueName(n) {
			return fmt.Errorf("%s rebound: it is a name of the generated prologue", n)
		}
	}
	if !body {
		if m := sharedRE.FindString(line); m != "" {
			return fmt.Errorf("%s read by a shared helper: pass it as a parameter", m)
		}
		return nil
	}
	for _, m := range nameRE2.FindAllStringSubmatch(line, -1) {
		sec := iface.Keys
		if m[1] == "A" {
			sec = iface.Argv
		}
		if !sec.has(m[2]) {
			return fmt.Errorf("%s is not declared in the header", m[0])
		}
	}
	return nil
}

// bound lists the names a line binds.
func bound(line string) []string {
	var out []string
	split := func(list string) {
		for _, n := range strings.Split(list, ",") {
			out = append(out, strings.TrimSpace(n))
		}
	}
	for _, m := range localRE.FindAllStringSubmatch(line, -1) {
		split(m[1])
	}
	for _, m := range functionRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
		if strings.TrimSpace(m[2]) != "" {
			split(m[2])
		}
	}
	for _, m := range forRE.FindAllStringSubmatch(line, -1) {
		split(m[1])
	}
	return out
}

func isPrologueName(n string) bool {
	return n == "ARITY" || n == "reply" || strings.HasPrefix(n, "K_") || strings.HasPrefix(n, "A_")
}
