package luascript

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// prologueNames are bound by the generated prologue; a script may not rebind them.
var prologueNames = map[string]bool{"K": true, "A": true, "ARITY": true, "reply": true}

// undeclaredFn is the prologue function a prelude's undeclared name compiles to.
const undeclaredFn = "luascript_undeclared"

// compileSource checks src (a script body, or a prelude when body is false) against the header
// and compiles its names to positions: K.name becomes KEYS[i] and A.name ARGV[i] for a fixed
// name, the prologue's array for a tail name (K.bucket → K__bucket), and a reply{...} of a fixed
// array reply, its fields named in header order, becomes the array literal itself.
//
// It refuses Lua that would bypass the header: KEYS or ARGV used at all; K or A other than as
// K.name or A.name (K[...], a bare K passed around: names the check cannot see); an assignment
// to K.name; a rebinding of a prologue name; "return {" (an array reply built by position). In a
// body it also refuses an undeclared name and a reply{...} whose fields are not the reply line's
// names in its order. A prelude is shared by scripts with different headers, so there an
// undeclared name compiles to a call that fails the script if it ever runs (a helper the script
// never calls may name what only other scripts declare), and a reply{...} that does not match
// this header is left to the prologue's reply, which refuses a missing field when it runs.
// firstLine is the file line of src's first line, for messages. usesUndeclared reports whether
// the output calls undeclaredFn.
func compileSource(iface Interface, src string, body bool, firstLine int) (out string, usesUndeclared bool, err error) {
	toks, err := lex(src)
	if err != nil {
		return "", false, err
	}
	at := func(i int) token {
		if i < 0 || i >= len(toks) {
			return token{kind: tPunct}
		}
		return toks[i]
	}
	punct := func(i int, s string) bool { t := at(i); return t.kind == tPunct && t.text == s }
	var b strings.Builder
	copied := 0           // src[:copied] is in b
	skip := map[int]int{} // token index → where copying resumes (a reply field's "name =")
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		line := t.line + firstLine - 1
		if to, ok := skip[i]; ok {
			b.WriteString(src[copied:t.pos])
			copied = to
			continue
		}
		if t.kind != tName || punct(i-1, ".") || punct(i-1, ":") {
			continue
		}
		switch t.text {
		case "KEYS", "ARGV":
			return "", false, fmt.Errorf("line %d: %s used directly; use the header's names (K.name, A.name)", line, t.text)
		case "K", "A":
			if !punct(i+1, ".") || at(i+2).kind != tName {
				return "", false, fmt.Errorf("line %d: %s used other than as %s.name: the header check cannot see the name", line, t.text, t.text)
			}
			if punct(i+3, "=") {
				return "", false, fmt.Errorf("line %d: %s.%s assigned: keys and arguments are read-only", line, t.text, at(i+2).text)
			}
			name := at(i + 2).text
			repl, ok := position(iface, t.text, name)
			if !ok {
				if body {
					return "", false, fmt.Errorf("line %d: %s.%s is not declared in the header", line, t.text, name)
				}
				repl, usesUndeclared = undeclaredFn+"('"+t.text+"."+name+"')", true
			}
			b.WriteString(src[copied:t.pos])
			b.WriteString(repl)
			copied = at(i + 2).end
			i += 2
		case "return":
			if punct(i+1, "{") {
				return "", false, fmt.Errorf("line %d: return {...} builds a reply by position; use reply{name = value}", line)
			}
		case "local", "function", "for":
			if name := rebound(toks, i); name != "" {
				return "", false, fmt.Errorf("line %d: %s rebinds %s, a name of the generated prologue", line, t.text, name)
			}
		case "reply":
			if !punct(i+1, "{") {
				continue
			}
			fields, err := replyFields(toks, i+1, line)
			if err != nil {
				return "", false, err
			}
			names := make([]string, len(fields))
			for k, f := range fields {
				names[k] = f.name
			}
			inOrder := slices.Equal(names, iface.Reply.names())
			if body && !inOrder {
				return "", false, fmt.Errorf("line %d: reply{%s} does not name the header's reply fields in order (%s)",
					line, strings.Join(names, ", "), strings.Join(iface.Reply.names(), " "))
			}
			if !inOrder || iface.Value || iface.Reply.Variadic() {
				continue // the prologue's reply builds it (and refuses a missing field)
			}
			// A fixed array reply compiles to the array itself: drop "reply" and each "name =",
			// and the values, compiled like any other tokens, stay where they are. A field that is
			// nil at run time shortens the array, and the Go side refuses a reply of the wrong
			// length (ErrReplyShape).
			b.WriteString(src[copied:t.pos])
			copied = t.end
			for _, f := range fields {
				skip[f.nameTok] = f.from
			}
		}
	}
	b.WriteString(src[copied:])
	return b.String(), usesUndeclared, nil
}

// position is the Lua expression a declared name compiles to.
func position(iface Interface, table, name string) (string, bool) {
	sec, global := iface.Keys, "KEYS"
	if table == "A" {
		sec, global = iface.Argv, "ARGV"
	}
	if i := slices.Index(sec.Fixed, name); i >= 0 {
		return global + "[" + strconv.Itoa(i+1) + "]", true
	}
	if slices.Contains(sec.Tail, name) {
		return tailVar(table, name), true
	}
	return "", false
}

// tailVar is the prologue's array of a tail name.
func tailVar(table, name string) string { return table + "__" + name }

// rebound returns a prologue name that the "local", "function" or "for" at toks[i] binds: a
// local, a function's name or one of its parameters, a loop variable. "" when none.
func rebound(toks []token, i int) string {
	j := i + 1
	if toks[i].text == "local" && j < len(toks) && toks[j].text == "function" {
		j++
	}
	for ; j < len(toks); j++ {
		t := toks[j]
		switch {
		case t.kind == tName && t.text == "in":
			return ""
		case t.kind == tName && prologueNames[t.text]:
			return t.text
		case t.kind == tName || (t.kind == tPunct && (t.text == "," || t.text == "(" || t.text == "." || t.text == ":" || t.text == "...")):
		default:
			return ""
		}
	}
	return ""
}

// replyField is one name = value field of a reply{...} constructor: its name, the index of the
// name's token and the offset where the value starts.
type replyField struct {
	name    string
	nameTok int
	from    int
}

// replyFields reads the table constructor that opens at toks[open] ("{") of a reply{...} call:
// name = value fields only.
func replyFields(toks []token, open, line int) ([]replyField, error) {
	var out []replyField
	depth := 0
	for j := open; j < len(toks); j++ {
		t, sep := toks[j], false
		if t.kind == tPunct {
			switch t.text {
			case "{", "(", "[":
				depth++
				sep = depth == 1 // the constructor's own brace
			case "}", ")", "]":
				depth--
			case ",", ";":
				sep = depth == 1
			}
		}
		switch {
		case depth == 0:
			return out, nil
		case !sep:
		case j+1 < len(toks) && toks[j+1].kind == tPunct && toks[j+1].text == "}":
			// an empty constructor or a trailing separator
		case j+3 >= len(toks) || toks[j+1].kind != tName || toks[j+2].kind != tPunct || toks[j+2].text != "=":
			return nil, fmt.Errorf("line %d: reply{...} takes name = value fields only", line)
		default:
			out = append(out, replyField{name: toks[j+1].text, nameTok: j + 1, from: toks[j+3].pos})
			j += 2 // the name and "="; the value's tokens follow
		}
	}
	return nil, fmt.Errorf("line %d: reply{ is not closed", line)
}
