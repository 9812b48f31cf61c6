package webit

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// writeShotsPage writes index.html beside the screenshots: each one under its step's name, and
// the test runner's summary, so the release report links one page a person can read.
func writeShotsPage(dir, summary string) error {
	pngs, err := filepath.Glob(filepath.Join(dir, "*.png"))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Browser chat app in Chromium</title>\n")
	b.WriteString("<style>body{font:15px system-ui;margin:1.5rem;max-width:75rem}figure{display:inline-block;margin:0 1rem 1.5rem 0;vertical-align:top}" +
		"img{border:1px solid #ccc;max-width:36rem}pre{background:#f4f4f4;padding:.5rem;overflow-x:auto}</style>\n")
	b.WriteString("<h1>Browser chat app in Debian's headless Chromium</h1>\n<p>gates/webit TestBrowserApp on the real services; screenshots of the key steps.</p>\n")
	for _, p := range pngs {
		name := filepath.Base(p)
		caption := strings.ReplaceAll(strings.TrimSuffix(name[strings.IndexByte(name, '-')+1:], ".png"), "-", " ")
		fmt.Fprintf(&b, "<figure><img src=\"%s\" alt=\"%s\"><figcaption>%s</figcaption></figure>\n", html.EscapeString(name),
			html.EscapeString(caption), html.EscapeString(caption))
	}
	fmt.Fprintf(&b, "<h2>Scenarios</h2>\n<pre>%s</pre>\n</html>\n", html.EscapeString(summary))
	return os.WriteFile(filepath.Join(dir, "index.html"), []byte(b.String()), 0o644)
}
