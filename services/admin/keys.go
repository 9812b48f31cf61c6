package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
)

// Scopes an API key may hold. Each route needs one.
const (
	ScopeRevocations = "revocations" // revoke and lift credentials
	ScopeDevTokens   = "dev_tokens"  // mint dev tokens (tests)
	ScopeSessions    = "sessions"    // kick sessions, list where users are online
	ScopeGroups      = "groups"      // create groups, change and list their members
	ScopeMessages    = "messages"    // send SYSTEM messages
	ScopeRooms       = "rooms"       // moderate rooms and read their counts
)

var allScopes = []string{ScopeRevocations, ScopeDevTokens, ScopeSessions, ScopeGroups, ScopeMessages, ScopeRooms}

// Scopes lists every scope a key may hold (qimctl admin key's help and check).
func Scopes() []string { return slices.Clone(allScopes) }

// keysFile is QIM_ADMIN_KEYS:
//
//	{"keys": [{"id": "ops", "sha256": "<64 hex digits>", "scopes": ["revocations"]}]}
//
// The file holds digests, so reading it does not reveal a key; `qimctl admin key` makes a key
// and its line.
type keysFile struct {
	Keys []apiKey `json:"keys"`
}

type apiKey struct {
	ID     string   `json:"id"`
	SHA256 string   `json:"sha256"`
	Scopes []string `json:"scopes"`
	digest [32]byte
}

func loadKeys(path string) ([]apiKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f keysFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Keys) == 0 {
		return nil, fmt.Errorf("%s lists no key", path)
	}
	ids := map[string]bool{}
	for i := range f.Keys {
		k := &f.Keys[i]
		d, err := hex.DecodeString(k.SHA256)
		switch {
		case k.ID == "" || ids[k.ID]:
			return nil, fmt.Errorf("%s: key %d: id empty or repeated", path, i+1)
		case err != nil || len(d) != 32:
			return nil, fmt.Errorf("%s: key %q: sha256 must be 64 hex digits", path, k.ID)
		}
		for _, s := range k.Scopes {
			if !slices.Contains(allScopes, s) {
				return nil, fmt.Errorf("%s: key %q: unknown scope %q (want one of %s)", path, k.ID, s, strings.Join(allScopes, ", "))
			}
		}
		ids[k.ID] = true
		copy(k.digest[:], d)
	}
	return f.Keys, nil
}

// errNoKey and errScope are the two refusals of authorize.
var (
	errNoKey = errors.New("a valid API key is required (Authorization: Bearer <key>)")
	errScope = errors.New("the API key lacks the scope this route needs")
)

// authorize finds the key of r's bearer token (every key is compared, in constant time) and
// checks it holds scope.
func authorize(keys []apiKey, r *http.Request, scope string) (*apiKey, error) {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" {
		return nil, errNoKey
	}
	sum := sha256.Sum256([]byte(bearer))
	var found *apiKey
	for i := range keys {
		if subtle.ConstantTimeCompare(sum[:], keys[i].digest[:]) == 1 {
			found = &keys[i]
		}
	}
	switch {
	case found == nil:
		return nil, errNoKey
	case !slices.Contains(found.Scopes, scope):
		return found, errScope
	}
	return found, nil
}

// KeyDigest is the sha256 field of a key's entry in QIM_ADMIN_KEYS.
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
