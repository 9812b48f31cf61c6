package config

import (
	"fmt"
	"sort"
	"strings"
)

// UnknownError lists QIM_* variables in the environment that no Q-IM program reads. A typo in a
// variable name would otherwise be ignored silently and the service would run on a default the
// operator believes they changed.
type UnknownError struct {
	Names []string          // sorted
	Hints map[string]string // name → what to use instead, when known
}

func (e *UnknownError) Error() string {
	var b strings.Builder
	b.WriteString("config: unknown environment variable")
	if len(e.Names) > 1 {
		b.WriteString("s")
	}
	for i, n := range e.Names {
		if i > 0 {
			b.WriteString(";")
		}
		b.WriteString(" " + n)
		if h := e.Hints[n]; h != "" {
			b.WriteString(" (" + h + ")")
		}
	}
	b.WriteString(" — see docs/config.md or `qim <service> --help`")
	return b.String()
}

// CheckEnviron reports every QIM_* variable of environ (os.Environ form, KEY=VALUE) that is not
// in known. renamed maps retired names to a hint naming their replacement; other unknown names
// get the closest known name as a suggestion when one is near.
func CheckEnviron(environ []string, known []Var, renamed map[string]string) error {
	names := make(map[string]bool, len(known))
	for _, v := range known {
		names[v.Name] = true
	}
	e := &UnknownError{Hints: map[string]string{}}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "QIM_") || names[name] {
			continue
		}
		e.Names = append(e.Names, name)
		if h, ok := renamed[name]; ok {
			e.Hints[name] = h
		} else if s := closest(name, names); s != "" {
			e.Hints[name] = fmt.Sprintf("did you mean %s?", s)
		}
	}
	if len(e.Names) == 0 {
		return nil
	}
	sort.Strings(e.Names)
	return e
}

// closest returns the known name within edit distance 3 of name, if exactly one is nearest.
func closest(name string, known map[string]bool) string {
	best, bestD, tie := "", 4, false
	for k := range known {
		d := distance(name, k)
		switch {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of two ASCII strings.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
