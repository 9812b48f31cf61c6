package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	htmlID  = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	// fenced code is skipped: a diagram's brackets are not links
	fence = regexp.MustCompile("(?s)```.*?```")
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation other than - and _
// dropped, each space a hyphen.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ContainsRune("àáâäçèéêëíîïñóôöúûü", r) }

func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	text := fence.ReplaceAllString(string(b), "")
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		out[anchor(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	for _, m := range htmlID.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestRelativeLinksResolve: every relative link in README.md and docs/**.md names a file of the
// repository, and a #fragment a heading (or an <a id>) of that Markdown file.
func TestRelativeLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	_ = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			rel, _ := filepath.Rel(root, f)
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: no such file", rel, target)
				continue
			}
			checked++
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", rel, target)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links: the scan is blind", checked)
	}
}
