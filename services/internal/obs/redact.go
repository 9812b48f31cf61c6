package obs

import (
	"encoding/hex"
	"strconv"
	"unicode"
	"unicode/utf8"

	"lukechampine.com/blake3"
)

// digestContext is the BLAKE3 key-derivation context (application, date, purpose), per the BLAKE3
// convention for context strings. Keying the hash by purpose means a digest printed in a log can
// never be matched against a digest the same bytes get anywhere else (idempotency keys, storage
// ids), so a log reader learns nothing beyond "same secret as that other line".
const digestContext = "qim 2026-01-01 obs log secret digest"

// digestHexLen is 8 hex digits (32 bits): enough to correlate one token across log lines and
// services, too short to serve as a verifier or to brute-force a high-entropy token against.
const digestHexLen = 8

// SecretDigest returns a short, non-reversible fingerprint of a token, key or password, such as
// "blake3:1f0c9a7e". The same secret gives the same digest in every process and version; an empty
// secret gives "empty" so a missing credential is still visible in the log.
func SecretDigest[S ~string | ~[]byte](secret S) string {
	if len(secret) == 0 {
		return "empty"
	}
	var sum [digestHexLen / 2]byte
	blake3.DeriveKey(sum[:], digestContext, []byte(secret))
	return "blake3:" + hex.EncodeToString(sum[:])
}

// BodyShape describes a message body or payload by its length only, such as "bytes=123". Length
// is what an operator needs to debug size limits and chunking; content is never needed in a log.
func BodyShape(body []byte) string {
	return "bytes=" + strconv.Itoa(len(body))
}

// TextShape describes user text by rune count and a coarse script class, such as
// "runes=12 script=latin". The script class helps debug rendering and normalisation reports
// without carrying any of the text; invalid UTF-8 is reported as such, since that is a client bug.
func TextShape(s string) string {
	if !utf8.ValidString(s) {
		return "bytes=" + strconv.Itoa(len(s)) + " script=invalid-utf8"
	}
	return "runes=" + strconv.Itoa(utf8.RuneCountInString(s)) + " script=" + scriptClass(s)
}

// scriptClasses are checked in order; the first table containing a letter names its class.
var scriptClasses = []struct {
	name   string
	tables []*unicode.RangeTable
}{
	{"latin", []*unicode.RangeTable{unicode.Latin}},
	{"cjk", []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul}},
	{"cyrillic", []*unicode.RangeTable{unicode.Cyrillic}},
	{"arabic", []*unicode.RangeTable{unicode.Arabic, unicode.Hebrew}},
}

// scriptClass returns the single class of every letter in s, "mixed" when letters come from more
// than one class, "other" for letters outside the known classes and "none" when s has no letters
// (digits, emoji, punctuation only).
func scriptClass(s string) string {
	found := ""
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		class := classOf(r)
		if found != "" && found != class {
			return "mixed"
		}
		found = class
	}
	if found == "" {
		return "none"
	}
	return found
}

func classOf(r rune) string {
	for _, c := range scriptClasses {
		if unicode.In(r, c.tables...) {
			return c.name
		}
	}
	return "other"
}
