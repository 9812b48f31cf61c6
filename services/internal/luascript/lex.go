package luascript

import (
	"fmt"
	"strings"
)

// A minimal Lua 5.1 lexer, just enough for compile.go: it skips comments and string contents, so
// "KEYS[1]" in a comment or a message never trips a check or a rewrite, and keeps names and
// punctuation with their lines and byte spans. It does not validate Lua; Redis does that.

type tokKind uint8

const (
	tName tokKind = iota
	tString
	tNumber
	tPunct
)

type token struct {
	kind     tokKind
	text     string // the name, number or punctuation; "" for a string
	line     int
	pos, end int // byte span in the source
}

// lex splits src into tokens; an unterminated string or long bracket is an error.
func lex(src string) ([]token, error) {
	var out []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if n, ok := longBracket(src[i+2:]); ok {
				end, err := closeLong(src, i+2, n, line)
				if err != nil {
					return nil, err
				}
				line += strings.Count(src[i:end], "\n")
				i = end
				continue
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '[':
			n, ok := longBracket(src[i:])
			if !ok {
				out = append(out, token{tPunct, "[", line, i, i + 1})
				i++
				continue
			}
			end, err := closeLong(src, i, n, line)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tString, "", line, i, end})
			line += strings.Count(src[i:end], "\n")
			i = end
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				switch src[j] {
				case '\\':
					j++
				case '\n':
					return nil, fmt.Errorf("line %d: unterminated string", line)
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			out = append(out, token{tString, "", line, i, j + 1})
			line += strings.Count(src[i:j], "\n") // escaped newlines
			i = j + 1
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i + 1
			for j < len(src) && (isNameChar(src[j]) || src[j] == '.' ||
				((src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{tNumber, src[i:j], line, i, j})
			i = j
		case isNameStart(c):
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			out = append(out, token{tName, src[i:j], line, i, j})
			i = j
		default:
			n := 1
			for _, p := range []string{"...", "..", "==", "~=", "<=", ">="} {
				if strings.HasPrefix(src[i:], p) {
					n = len(p)
					break
				}
			}
			out = append(out, token{tPunct, src[i : i+n], line, i, i + n})
			i += n
		}
	}
	return out, nil
}

// longBracket reports an opening long bracket ("[[", "[==[") at the start of s and its level.
func longBracket(s string) (int, bool) {
	if len(s) == 0 || s[0] != '[' {
		return 0, false
	}
	n := 1
	for n < len(s) && s[n] == '=' {
		n++
	}
	if n < len(s) && s[n] == '[' {
		return n - 1, true
	}
	return 0, false
}

// closeLong returns the index just past the long bracket of level n that opens at src[start].
func closeLong(src string, start, n, line int) (int, error) {
	closer := "]" + strings.Repeat("=", n) + "]"
	k := strings.Index(src[start+n+2:], closer)
	if k < 0 {
		return 0, fmt.Errorf("line %d: unterminated long bracket", line)
	}
	return start + n + 2 + k + len(closer), nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }
