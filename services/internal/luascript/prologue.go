package luascript

import (
	"strconv"
	"strings"
)

// prologue is the Lua that luascript prepends (before the prelude) to a script with interface
// iface. It binds, as locals the prelude and body share:
//
//	K      the keys by name: K.epoch = KEYS[1], …; a tail name is an array (K.bucket[i])
//	A      the arguments by name, the same way (A.members[i])
//	ARITY  true when #KEYS and #ARGV fit the header: the exact counts, or at least the fixed
//	       ones plus whole groups of a tail (every array of one group then has the same length)
//	reply  builds the reply from named fields in header order: reply{status = 'OK', …}; the
//	       tail field is a Lua array appended after the fixed positions; a value header returns
//	       its one field itself
//
// K and A refuse to read or set an undeclared name, and reply refuses a missing or
// unknown field, with a script error: the load-time check (check.go) sees the body, and these
// catch what it cannot see (the shared prelude, a reply table built before the call).
//
// A tail is copied into its own array rather than read through an offset into ARGV, so no
// position survives in a body. The copy is one pass over references to the argument strings.
func prologue(script string, iface Interface) string {
	var b strings.Builder
	q := func(s string) string { return "'" + s + "'" }
	b.WriteString("-- luascript prologue: generated at load from the --! header of " + script + "; do not edit.\n")
	b.WriteString("local K, A, ARITY, reply\ndo\n")
	b.WriteString("  local function bind(t, what, known)\n")
	b.WriteString("    return setmetatable(t, {__index = function(_, k)\n")
	b.WriteString("      if known[k] then return nil end\n")
	b.WriteString("      error('luascript: " + script + ": ' .. what .. '.' .. tostring(k) .. ' is not in the header', 2)\n")
	b.WriteString("    end, __newindex = function(t2, k, v)\n")
	b.WriteString("      if known[k] then return rawset(t2, k, v) end\n")
	b.WriteString("      error('luascript: " + script + ": ' .. what .. '.' .. tostring(k) .. ' is not in the header', 2)\n")
	b.WriteString("    end})\n  end\n")
	writeSection(&b, "k", "K", "KEYS", iface.Keys)
	writeSection(&b, "a", "A", "ARGV", iface.Argv)
	b.WriteString("  ARITY = " + arity("KEYS", iface.Keys) + " and " + arity("ARGV", iface.Argv) + "\n")

	fixed := iface.Reply.Fixed
	b.WriteString("  local fields = {" + join(fixed, q, ", ") + "}\n")
	b.WriteString("  local known = {" + join(iface.Reply.names(), func(n string) string { return n + " = true" }, ", ") + "}\n")
	b.WriteString("  reply = function(r)\n")
	b.WriteString("    for k in pairs(r) do\n")
	b.WriteString("      if not known[k] then error('luascript: " + script + ": reply has no field ' .. tostring(k), 2) end\n")
	b.WriteString("    end\n    local out = {}\n")
	b.WriteString("    for i = 1, " + strconv.Itoa(len(fixed)) + " do\n")
	b.WriteString("      local v = r[fields[i]]\n")
	b.WriteString("      if v == nil then error('luascript: " + script + ": reply lacks ' .. fields[i], 2) end\n")
	b.WriteString("      out[i] = v\n    end\n")
	switch {
	case iface.Value:
		b.WriteString("    return out[1]\n")
	case iface.Reply.Variadic():
		tail := iface.Reply.Tail[0]
		b.WriteString("    local tail = r." + tail + "\n")
		b.WriteString("    if type(tail) ~= 'table' then error('luascript: " + script + ": reply." + tail + " must be an array', 2) end\n")
		b.WriteString("    for i = 1, #tail do out[" + strconv.Itoa(len(fixed)) + " + i] = tail[i] end\n")
		b.WriteString("    return out\n")
	default:
		b.WriteString("    return out\n")
	}
	b.WriteString("  end\nend\n")
	return b.String()
}

// writeSection writes the construction of K or A (global is KEYS or ARGV).
func writeSection(b *strings.Builder, local, name, global string, s Section) {
	items := make([]string, 0, len(s.Fixed)+len(s.Tail))
	for i, n := range s.Fixed {
		items = append(items, n+" = "+global+"["+strconv.Itoa(i+1)+"]")
	}
	for _, n := range s.Tail {
		items = append(items, n+" = {}")
	}
	b.WriteString("  local " + local + " = {" + strings.Join(items, ", ") + "}\n")
	if s.Variadic() {
		nf, g := len(s.Fixed), len(s.Tail)
		count, step := "#"+global+" - "+strconv.Itoa(nf), "i"
		if g > 1 {
			count, step = "math.floor(("+count+") / "+strconv.Itoa(g)+")", strconv.Itoa(g)+" * i"
		}
		b.WriteString("  for i = 1, " + count + " do\n")
		for j, n := range s.Tail {
			// Item j (1-based) of group i sits at nf + g*(i-1) + j.
			b.WriteString("    " + local + "." + n + "[i] = " + global + "[" + strconv.Itoa(nf-g+j+1) + " + " + step + "]\n")
		}
		b.WriteString("  end\n")
	}
	b.WriteString("  " + name + " = bind(" + local + ", '" + name + "', {" +
		join(s.names(), func(n string) string { return n + " = true" }, ", ") + "})\n")
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
