package config

import (
	"fmt"
	"strings"
)

// Help renders vars for a command's --help: one entry per variable with its default (or
// "required") and unit, then its doc line.
func Help(vars []Var) string {
	var b strings.Builder
	b.WriteString("Environment variables (durations are Go durations such as 250ms, 5s, 1m; lists are comma-separated):\n")
	for _, v := range vars {
		fmt.Fprintf(&b, "  %s  %s\n      %s\n", v.Name, attributes(v), v.Doc)
	}
	return b.String()
}

// attributes is the "(default …, unit)" part of a variable's line.
func attributes(v Var) string {
	parts := []string{v.Type}
	switch {
	case v.Required:
		parts = append(parts, "required")
	case v.Default != "":
		parts = append(parts, "default "+v.Default)
	default:
		parts = append(parts, "default unset")
	}
	if v.Unit != "" {
		parts = append(parts, "unit: "+v.Unit)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Markdown renders vars as a Markdown table for docs/config.md.
func Markdown(vars []Var) string {
	var b strings.Builder
	b.WriteString("| variable | type | default | unit | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range vars {
		def := "—"
		switch {
		case v.Required:
			def = "**required**"
		case v.Default != "":
			def = "`" + v.Default + "`"
		}
		unit := v.Unit
		if unit == "" {
			unit = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", v.Name, v.Type, def, unit, escape(v.Doc))
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
