package lint

import (
	"bufio"
	"bytes"
	"context"
	"regexp"
)

// alias is one retired name. The patterns are assembled from parts so that this file, which every
// run scans like any other non-doc file, does not contain the names it forbids; exempting the
// lint's own package instead would also exempt any real use that crept into it.
type alias struct {
	name string
	re   *regexp.Regexp
}

// aliases are proper names of components the contract renamed. Matching is case-sensitive: the
// lower-case prose "message store" describes storage in general and is not the retired name.
var aliases = []alias{
	{"Message" + "Node", regexp.MustCompile("Message" + "Node")},
	{"Mailbox" + " Node", regexp.MustCompile("Mailbox" + `[ \t]+` + "Node")},
	{"Message" + " Store", regexp.MustCompile("Message" + `[ \t]+` + "Store")},
	{"connection" + "_epoch", regexp.MustCompile("connection" + "_epoch")},
}

// checkAliases flags retired names in every non-doc file (code, config, scripts, schemas). Two
// names for one concept is how a durable system ends up with two implementations of it; docs may
// still mention a retired name to say what replaced it, so *.md and docs/ are exempt.
func checkAliases(_ context.Context, e *env) []Finding {
	var out []Finding
	for _, p := range e.files {
		if isDoc(p) {
			continue
		}
		data, err := e.read(p)
		if err != nil {
			out = append(out, Finding{File: p, Rule: "aliases", Text: err.Error()})
			continue
		}
		if isBinary(data) {
			continue
		}
		out = append(out, scanAliases(p, data)...)
	}
	return out
}

func scanAliases(p string, data []byte) []Finding {
	var out []Finding
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		for _, a := range aliases {
			if a.re.Match(sc.Bytes()) {
				out = append(out, Finding{File: p, Line: n, Rule: "aliases",
					Text: "retired name " + quote(a.name) + "; use the contract's term (docs may mention it)"})
			}
		}
	}
	if err := sc.Err(); err != nil {
		out = append(out, Finding{File: p, Rule: "aliases", Text: "cannot scan: " + err.Error()})
	}
	return out
}
