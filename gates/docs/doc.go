// Package docs checks the repository's Markdown: every relative link of README.md and docs/
// names a file that exists and, with a #fragment, a heading of that file; and every count the
// docs that describe HEAD state (release gates, e2e scenarios, chaos cells, opcodes) and every
// gate they name by number is what the registries hold, so the prose cannot drift from the code.
package docs
