package lint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// AllowFile is where exceptions live, relative to the root. Each line is
//
//	path:rule  # reason
//
// where path is a file, or a directory ending in "/", and rule is a source rule's name. The
// reason is mandatory: an exception nobody can explain is a violation nobody decided to accept.
const AllowFile = "gates/lint/allow.txt"

type allowEntry struct {
	line   int
	path   string
	rule   string
	reason string
	hits   int
}

type allowlist struct {
	entries  []*allowEntry
	problems []Finding // malformed lines, reported by the allowlist check
}

func loadAllowlist(root string) *allowlist {
	al := &allowlist{}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(AllowFile)))
	if errors.Is(err, fs.ErrNotExist) {
		return al
	}
	if err != nil {
		al.problem(0, "cannot read: "+err.Error())
		return al
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		al.parseLine(n, strings.TrimSpace(sc.Text()))
	}
	return al
}

func (al *allowlist) parseLine(n int, line string) {
	if line == "" || strings.HasPrefix(line, "#") {
		return
	}
	entry, reason, _ := strings.Cut(line, "#")
	entry, reason = strings.TrimSpace(entry), strings.TrimSpace(reason)
	path, rule, ok := cutLast(entry, ":")
	switch {
	case !ok || path == "" || rule == "":
		al.problem(n, "want `path:rule  # reason`, got "+quote(line))
	case reason == "":
		al.problem(n, "entry "+quote(entry)+" has no `# reason`")
	case !isAllowlistable(rule):
		al.problem(n, "rule "+quote(rule)+" cannot be allowlisted (source rules only: "+
			strings.Join(allowlistableNames(), ", ")+")")
	default:
		al.entries = append(al.entries, &allowEntry{line: n, path: path, rule: rule, reason: reason})
	}
}

func (al *allowlist) problem(line int, text string) {
	al.problems = append(al.problems, Finding{File: AllowFile, Line: line, Rule: "allowlist", Text: text})
}

// filter drops the findings an entry covers and counts the entry's hits. Findings about the
// check itself (no file) are never covered.
func (al *allowlist) filter(rule string, fs []Finding) []Finding {
	var kept []Finding
	for _, f := range fs {
		if e := al.match(rule, f.File); e != nil {
			e.hits++
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

func (al *allowlist) match(rule, file string) *allowEntry {
	if file == "" {
		return nil
	}
	for _, e := range al.entries {
		if e.rule == rule && (e.path == file || (strings.HasSuffix(e.path, "/") && strings.HasPrefix(file, e.path))) {
			return e
		}
	}
	return nil
}

// checkAllowlist reports malformed lines, entries naming files that do not exist, and entries
// that suppressed nothing although their rule ran: a stale exception would silently cover the
// next real violation in that file.
func checkAllowlist(_ context.Context, e *env) []Finding {
	out := append([]Finding(nil), e.allow.problems...)
	for _, entry := range e.allow.entries {
		switch {
		case !e.pathExists(entry.path):
			out = append(out, Finding{File: AllowFile, Line: entry.line, Rule: "allowlist",
				Text: "entry names " + quote(entry.path) + ", which is not in the tree"})
		case e.ran[entry.rule] && entry.hits == 0:
			out = append(out, Finding{File: AllowFile, Line: entry.line, Rule: "allowlist",
				Text: "entry " + quote(entry.path+":"+entry.rule) + " suppresses nothing; remove it"})
		}
	}
	return out
}

func (e *env) pathExists(p string) bool {
	for _, f := range e.files {
		if f == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(f, p)) {
			return true
		}
	}
	return false
}

func isAllowlistable(rule string) bool {
	for _, n := range allowlistableNames() {
		if n == rule {
			return true
		}
	}
	return false
}

func allowlistableNames() []string {
	var names []string
	for _, c := range sourceRules() {
		names = append(names, c.name)
	}
	return names
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(sep):]), true
}

func quote(s string) string { return "`" + s + "`" }
