package luascript

import (
	"strconv"
	"strings"
)

// prologue is the Lua the loader puts before base.lua, the store's prelude and the script file,
// generated from the file's --! header (docs/lua-scripts.md lists it for every script). It binds,
// as plain locals the prelude and the file share:
//
//	K_name, A_name  KEYS[i] and ARGV[i] of a fixed name; for a tail name the array of its items
//	                (K_bucket[i]), the arrays of one group of equal length when ARITY holds
//	ARITY           true when #KEYS and #ARGV fit the header: the exact counts, or at least the
//	                fixed ones plus whole groups of a tail
//	reply           builds the reply from named fields in header order: reply{status = 'OK', …};
//	                the tail field is a Lua array appended after the fixed positions; a value
//	                header returns its one field itself. A missing field is a script error, never
//	                a silently shorter array.
//
// Invariant: the script file runs byte for byte as written; the only Lua a reader does not see in
// the repository's .lua files is this prologue, and it is a function of the header alone.
//
// Locals rather than K and A tables: a table per call built behind a guarding metatable cost
// about 2 µs more per reserve_and_record call inside Redis (ADR-0018), and rewriting K.name to
// KEYS[i] in the loader made Redis run, and report errors against, a text that was in no file.
// A local is read from a register; a prelude naming what a script's header lacks reads an
// undefined global, which Redis refuses with an error when that line runs.
func prologue(script string, iface Interface) string {
	var b strings.Builder
	b.WriteString("-- luascript prologue of " + script + ", generated from its --! header; do not edit.\n")
	writeFixed(&b, "K_", "KEYS", iface.Keys)
	writeFixed(&b, "A_", "ARGV", iface.Argv)
	b.WriteString("local ARITY = " + arity("KEYS", iface.Keys) + " and " + arity("ARGV", iface.Argv) + "\n")
	writeTail(&b, "K_", "KEYS", iface.Keys)
	writeTail(&b, "A_", "ARGV", iface.Argv)
	writeReply(&b, script, iface)
	return b.String()
}

// writeFixed binds the fixed names of a section (prefix K_ or A_, global KEYS or ARGV).
func writeFixed(b *strings.Builder, prefix, global string, s Section) {
	if len(s.Fixed) == 0 {
		return
	}
	vals := make([]string, len(s.Fixed))
	for i := range s.Fixed {
		vals[i] = global + "[" + strconv.Itoa(i+1) + "]"
	}
	b.WriteString("local " + join(s.Fixed, prefixed(prefix), ", ") + " = " + strings.Join(vals, ", ") + "\n")
}

// writeTail writes the arrays of a section's tail.
func writeTail(b *strings.Builder, prefix, global string, s Section) {
	if !s.Variadic() {
		return
	}
	empty := join(s.Tail, func(string) string { return "{}" }, ", ")
	b.WriteString("local " + join(s.Tail, prefixed(prefix), ", ") + " = " + empty + "\n")
	nf, g := len(s.Fixed), len(s.Tail)
	count, step := "#"+global+" - "+strconv.Itoa(nf), "i"
	if g > 1 {
		count, step = "math.floor(("+count+") / "+strconv.Itoa(g)+")", strconv.Itoa(g)+" * i"
	}
	b.WriteString("for i = 1, " + count + " do\n")
	for j, n := range s.Tail {
		// Item j (0-based) of group i sits at nf + g*(i-1) + j + 1.
		b.WriteString("  " + prefix + n + "[i] = " + global + "[" + strconv.Itoa(nf-g+j+1) + " + " + step + "]\n")
	}
	b.WriteString("end\n")
}

// writeReply writes the reply function of the header's reply or value line.
func writeReply(b *strings.Builder, script string, iface Interface) {
	fixed := iface.Reply.Fixed
	field := func(n string) string { return "r." + n }
	var missing []string
	for _, n := range fixed {
		missing = append(missing, "r."+n+" == nil")
	}
	if iface.Reply.Variadic() {
		missing = append(missing, "type(r."+iface.Reply.Tail[0]+") ~= 'table'")
	}
	b.WriteString("local function reply(r)\n")
	b.WriteString("  if " + strings.Join(missing, " or ") + " then\n")
	b.WriteString("    error('luascript: " + script + ": reply needs " + strings.Join(iface.Reply.names(), " ") + "', 2)\n")
	b.WriteString("  end\n")
	switch {
	case iface.Value:
		b.WriteString("  return r." + fixed[0] + "\n")
	case iface.Reply.Variadic():
		b.WriteString("  local out, tail = {" + join(fixed, field, ", ") + "}, r." + iface.Reply.Tail[0] + "\n")
		b.WriteString("  for i = 1, #tail do out[" + strconv.Itoa(len(fixed)) + " + i] = tail[i] end\n")
		b.WriteString("  return out\n")
	default:
		b.WriteString("  return {" + join(fixed, field, ", ") + "}\n")
	}
	b.WriteString("end\n")
}

// arity is the Lua condition that the count of global fits the section.
func arity(global string, s Section) string {
	nf := strconv.Itoa(len(s.Fixed))
	switch {
	case !s.Variadic():
		return "#" + global + " == " + nf
	case len(s.Tail) == 1:
		return "#" + global + " >= " + nf
	}
	return "#" + global + " >= " + nf + " and (#" + global + " - " + nf + ") % " + strconv.Itoa(len(s.Tail)) + " == 0"
}

func prefixed(prefix string) func(string) string { return func(n string) string { return prefix + n } }

func join(names []string, f func(string) string, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = f(n)
	}
	return strings.Join(out, sep)
}
