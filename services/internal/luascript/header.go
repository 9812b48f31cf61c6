package luascript

import (
	"fmt"
	"regexp"
	"strings"
)

// Interface is a script's declared interface, parsed from the "--!" header that opens its file:
//
//	--! keys: epoch watermark identity [bucket index]...
//	--! argv: epoch offset prev_offset digest seq day bucket_at index_at identity_ttl members...
//	--! reply: seq duplicate kind
//
// keys and argv name KEYS[i] and ARGV[i] in order; reply names the positions of an array reply,
// value (instead of reply) names a single non-array reply. The last item of keys, argv or reply
// may repeat: "name..." is a tail of single values, "[a b]..." (keys and argv only) a tail of
// groups. Names are lower-case Lua identifiers, unique within their line; an empty keys or argv
// line declares none.
//
// The header is the one statement of the agreement between a script and its Go caller: luascript
// generates the Lua bindings from it (prologue.go) and checks the Go types against it (bind.go),
// so neither side writes a position by hand.
type Interface struct {
	Keys  Section
	Argv  Section
	Reply Section
	// Value: the reply is the single value Reply.Fixed[0], not an array.
	Value bool
}

// Section is one header line: the fixed names, then an optional repeated tail.
type Section struct {
	Fixed []string
	// Tail are the names of the repeated group ("members..." has one, "[bucket index]..." two);
	// empty when the section has no tail.
	Tail []string
}

// Variadic reports a repeated tail.
func (s Section) Variadic() bool { return len(s.Tail) > 0 }

// has reports whether name is declared in the section.
func (s Section) has(name string) bool {
	for _, n := range s.Fixed {
		if n == name {
			return true
		}
	}
	for _, n := range s.Tail {
		if n == name {
			return true
		}
	}
	return false
}

// names lists every name, fixed first.
func (s Section) names() []string { return append(append([]string(nil), s.Fixed...), s.Tail...) }

const headerMark = "--!"

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// luaReserved are Lua 5.1's keywords: K.end would not parse.
	luaReserved = map[string]bool{
		"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
		"false": true, "for": true, "function": true, "if": true, "in": true, "local": true,
		"nil": true, "not": true, "or": true, "repeat": true, "return": true, "then": true,
		"true": true, "until": true, "while": true,
	}
)

// parseHeader reads the header lines at the top of src and returns the interface and the body
// that follows them. The header must be the first lines, in the order keys, argv, reply|value;
// a "--!" line anywhere else is refused, so a stale second header cannot hide in a comment.
func parseHeader(src string) (Interface, string, error) {
	var (
		iface Interface
		seen  []string
		body  = src
	)
	for strings.HasPrefix(body, headerMark) {
		line, rest, _ := strings.Cut(body, "\n")
		body = rest
		dir, list, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, headerMark)), ":")
		if !ok {
			return Interface{}, "", fmt.Errorf("header line %q lacks ':'", line)
		}
		dir = strings.TrimSpace(dir)
		want := []string{"keys", "argv", "reply"}[min(len(seen), 2)]
		if matches := dir == want || (dir == "value" && want == "reply"); !matches || len(seen) == 3 {
			return Interface{}, "", fmt.Errorf("header line %d is %q, want %q (order: keys, argv, reply or value)",
				len(seen)+1, dir, want)
		}
		seen = append(seen, dir)
		sec, err := parseSection(dir, strings.Fields(list))
		if err != nil {
			return Interface{}, "", fmt.Errorf("header %s: %w", dir, err)
		}
		switch dir {
		case "keys":
			iface.Keys = sec
		case "argv":
			iface.Argv = sec
		default:
			iface.Reply, iface.Value = sec, dir == "value"
		}
	}
	if len(seen) != 3 {
		return Interface{}, "", fmt.Errorf("script must open with --! keys:, --! argv: and --! reply: (or value:) lines")
	}
	if i := strings.Index(body, headerMark); i >= 0 {
		return Interface{}, "", fmt.Errorf("%q below the header (line %d)", headerMark, len(seen)+1+strings.Count(body[:i], "\n"))
	}
	return iface, body, nil
}

// parseSection parses the items of one header line.
func parseSection(dir string, items []string) (Section, error) {
	var s Section
	seen := map[string]bool{}
	add := func(name string) error {
		switch {
		case !nameRE.MatchString(name) || luaReserved[name]:
			return fmt.Errorf("%q is not a lower-case Lua name", name)
		case seen[name]:
			return fmt.Errorf("%q declared twice", name)
		}
		seen[name] = true
		return nil
	}
	for i := 0; i < len(items); i++ {
		it := items[i]
		if strings.HasPrefix(it, "[") {
			if dir == "reply" || dir == "value" {
				return Section{}, fmt.Errorf("a %s cannot repeat a group", dir)
			}
			j := i
			for j < len(items) && !strings.HasSuffix(items[j], "]...") {
				j++
			}
			if j != len(items)-1 {
				return Section{}, fmt.Errorf("a group must be written [a b]... and come last")
			}
			group := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(strings.Join(items[i:], " "), "["), "]..."))
			if len(group) == 0 {
				return Section{}, fmt.Errorf("empty group")
			}
			for _, g := range group {
				if err := add(g); err != nil {
					return Section{}, err
				}
			}
			s.Tail = group
			break
		}
		name, tail := strings.CutSuffix(it, "...")
		if tail && i != len(items)-1 {
			return Section{}, fmt.Errorf("only the last item may repeat (%q)", it)
		}
		if err := add(name); err != nil {
			return Section{}, err
		}
		if tail {
			s.Tail = []string{name}
		} else {
			s.Fixed = append(s.Fixed, name)
		}
	}
	if dir == "value" && (len(s.Fixed) != 1 || s.Variadic()) {
		return Section{}, fmt.Errorf("a value is exactly one name")
	}
	if dir == "reply" && len(s.Fixed)+len(s.Tail) == 0 {
		return Section{}, fmt.Errorf("a reply names at least one position")
	}
	return s, nil
}
