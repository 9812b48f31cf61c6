package luascript

import (
	"strconv"
	"strings"
)

// prologue is the Lua that luascript prepends (before the prelude) to a script with interface
// iface. compileSource has already turned every fixed K.name and A.name into KEYS[i] and
// ARGV[i]; the prologue binds what is left, as locals the prelude and body share:
//
//	K__name, A__name  the array of a tail name (K.bucket[i] compiles to K__bucket[i]); the
//	                  arrays of one group have the same length when ARITY holds
//	ARITY             true when #KEYS and #ARGV fit the header: the exact counts, or at least
//	                  the fixed ones plus whole groups of a tail
//	reply             builds the reply from named fields in header order: reply{status = 'OK',
//	                  …}; the tail field is a Lua array appended after the fixed positions; a
//	                  value header returns its one field itself. A missing field is a script
//	                  error, never a silently shorter array.
//	luascript_undeclared  raises the error of a name the prelude uses and this header lacks
//
// Names compile to positions instead of being looked up in generated tables at run time, because
// the tables cost every call: K and A as Lua tables behind a guarding metatable, with a reply
// helper that scanned its fields, measured about 2 µs more per reserve_and_record call than the
// positional script it replaced (9.3 → 11.5 µs inside Redis); compiled, only reply's named table
// and a tail's copy remain. A tail is copied into its own array rather than read through an
// offset into ARGV, so no position survives in a body; the copy is one pass over references.
func prologue(script string, iface Interface, undeclared bool) string {
	var b strings.Builder
	field := func(n string) string { return "r." + n }
	b.WriteString("-- luascript prologue: generated at load from the --! header of " + script + "; do not edit.\n")
	b.WriteString("local ARITY = " + arity("KEYS", iface.Keys) + " and " + arity("ARGV", iface.Argv) + "\n")
	writeTail(&b, "K", "KEYS", iface.Keys)
	writeTail(&b, "A", "ARGV", iface.Argv)
	if undeclared {
		b.WriteString("local function " + undeclaredFn + "(name)\n")
		b.WriteString("  error('luascript: " + script + ": ' .. name .. ' is not a name of the header', 2)\nend\n")
	}
	fixed := iface.Reply.Fixed
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
	return b.String()
}

// writeTail writes the arrays of a section's tail (table is K or A, global KEYS or ARGV).
func writeTail(b *strings.Builder, table, global string, s Section) {
	if !s.Variadic() {
		return
	}
	vars := join(s.Tail, func(n string) string { return tailVar(table, n) }, ", ")
	empty := join(s.Tail, func(string) string { return "{}" }, ", ")
	b.WriteString("local " + vars + " = " + empty + "\n")
	nf, g := len(s.Fixed), len(s.Tail)
	count, step := "#"+global+" - "+strconv.Itoa(nf), "i"
	if g > 1 {
		count, step = "math.floor(("+count+") / "+strconv.Itoa(g)+")", strconv.Itoa(g)+" * i"
	}
	b.WriteString("for i = 1, " + count + " do\n")
	for j, n := range s.Tail {
		// Item j (0-based) of group i sits at nf + g*(i-1) + j + 1.
		b.WriteString("  " + tailVar(table, n) + "[i] = " + global + "[" + strconv.Itoa(nf-g+j+1) + " + " + step + "]\n")
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

func join(names []string, f func(string) string, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = f(n)
	}
	return strings.Join(out, sep)
}
