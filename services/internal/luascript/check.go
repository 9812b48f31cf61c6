package luascript

import (
	"fmt"
	"slices"
	"strings"
)

// prologueNames are bound by the generated prologue; a script may not rebind them.
var prologueNames = map[string]bool{"K": true, "A": true, "ARITY": true, "reply": true}

// checkSource refuses Lua that would bypass the header: KEYS or ARGV used at all, K[...] or
// A[...] (a name the check cannot see), a rebinding of a prologue name, and "return {" (an array
// reply built by position). For a script body (body = true) it also checks every K.name and
// A.name against the header and the fields of every reply{...} against the reply line. A prelude
// is shared by scripts with different headers, so its names are checked when it runs: the
// prologue's tables refuse an undeclared name and reply refuses a missing or unknown field.
// firstLine is the file line of src's first line, for messages.
func checkSource(iface Interface, src string, body bool, firstLine int) error {
	toks, err := lex(src)
	if err != nil {
		return err
	}
	at := func(i int) token {
		if i < 0 || i >= len(toks) {
			return token{kind: tPunct}
		}
		return toks[i]
	}
	punct := func(i int, s string) bool { t := at(i); return t.kind == tPunct && t.text == s }
	for i, t := range toks {
		line := t.line + firstLine - 1
		if t.kind != tName || punct(i-1, ".") || punct(i-1, ":") {
			continue
		}
		switch t.text {
		case "KEYS", "ARGV":
			return fmt.Errorf("line %d: %s used directly; use the header's names (K.name, A.name)", line, t.text)
		case "K", "A":
			sec, what := iface.Keys, "keys"
			if t.text == "A" {
				sec, what = iface.Argv, "argv"
			}
			switch {
			case punct(i+1, "["):
				return fmt.Errorf("line %d: %s[...] hides the name from the header check; use %s.name", line, t.text, t.text)
			case body && punct(i+1, ".") && at(i+2).kind == tName && !sec.has(at(i+2).text):
				return fmt.Errorf("line %d: %s.%s is not declared in the header's %s", line, t.text, at(i+2).text, what)
			}
		case "return":
			if punct(i+1, "{") {
				return fmt.Errorf("line %d: return {...} builds a reply by position; use reply{name = value}", line)
			}
		case "local":
			j := i + 1
			if at(j).text == "function" {
				j++
			}
			for ; at(j).kind == tName; j += 2 {
				if prologueNames[at(j).text] {
					return fmt.Errorf("line %d: local %s rebinds a name of the generated prologue", line, at(j).text)
				}
				if !punct(j+1, ",") {
					break
				}
			}
		case "reply":
			if body && punct(i+1, "{") {
				if err := checkReplyFields(iface, toks[i+1:], line); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkReplyFields checks the table constructor that starts at toks[0] ("{") of a reply{...}
// call: name = value fields only, exactly the reply line's names.
func checkReplyFields(iface Interface, toks []token, line int) error {
	var got []string
	depth, start := 0, true
scan:
	for j := 0; j < len(toks); j++ {
		t := toks[j]
		if depth == 1 && start && !(t.kind == tPunct && t.text == "}") {
			if t.kind != tName || j+1 >= len(toks) || toks[j+1].kind != tPunct || toks[j+1].text != "=" {
				return fmt.Errorf("line %d: reply{...} takes name = value fields only", line)
			}
			got = append(got, t.text)
		}
		start = false
		if t.kind != tPunct {
			continue
		}
		switch t.text {
		case "{", "(", "[":
			depth++
			start = depth == 1
		case "}", ")", "]":
			depth--
		case ",", ";":
			start = depth == 1
		}
		if depth == 0 {
			break scan
		}
	}
	want := iface.Reply.names()
	for _, n := range got {
		if !slices.Contains(want, n) {
			return fmt.Errorf("line %d: reply field %q is not in the header's reply (%s)", line, n, strings.Join(want, " "))
		}
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			return fmt.Errorf("line %d: reply{...} lacks field %q of the header's reply", line, n)
		}
	}
	return nil
}
