// Package docs checks the repository's Markdown: every relative link of README.md and docs/
// names a file that exists and, with a #fragment, a heading of that file.
package docs
