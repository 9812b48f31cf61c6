// Package keyfamily is how a store declares the Redis keys it writes: one Family per key
// layout, with the instance it lives in and its expiry rule. Package services aggregates every
// store's families (inspect.RedisKeyFamilies) for the redis-artifacts gate, which classifies
// every key of both instances by them; a key no family matches is an undeclared artifact.
//
// The declarations live next to the key prefixes and builders they describe (msgstore and
// mailboxstore keys.go, session store.go, identity scripts.go, gateway auth.go), so a new key
// layout and its declaration change in one place. This package only holds the type and the
// rules every declaration must satisfy; it never touches Redis.
//
// Rejected: a table of prefixes kept in gates/. It would be a copy that drifts from the stores,
// and a prefix alone cannot classify: the gateway's qim:sess:<tenant>:… is a prefix of the
// session's qim:sess:list:…, so each family carries an anchored pattern built from its owner's
// prefix constant.
package keyfamily

import (
	"fmt"
	"regexp"
	"strings"
)

// Instance names the Redis a family lives in.
type Instance string

// The two Redis instances of a deployment (docs/architecture.md, section 3).
const (
	Core    Instance = "core"    // commit facts, history, identity, session lists (appendfsync always)
	Mailbox Instance = "mailbox" // mailbox entries, watermarks, cursors
)

// Family is one key layout of one store.
type Family struct {
	Name     string   // "<owner>.<what>", e.g. "msgstore.history_record"
	Instance Instance // where the keys live
	Layout   string   // the layout as the owner documents it, e.g. "qim:hrec:{tag}:<tenant>:<cid>:<seq>"
	Prefix   string   // literal start of every key; the cheap first filter
	Pattern  *regexp.Regexp
	// Example is one key built by the owner's own key builder. Validate holds it to Pattern,
	// and package services holds every example against every family of every owner, so two
	// owners' layouts cannot overlap unnoticed (the gateway's qim:sess:<tenant>:… and the
	// session's qim:sess:list:… share a prefix).
	Example string
	// Expires: every key must carry a TTL. When false the keys must live forever and Forever
	// says why in one line (a TTL on them is then a defect too: the reason is always that
	// something would restart or be forgotten).
	Expires bool
	Forever string
	// Unbounded, on a family that must expire, says that today's keys get no TTL and no trim
	// and what will bound them. It is a known gap, not an allowance: the gate still fails.
	Unbounded string
	// MailboxEntries: every member of a key is one mailbox entry (the gate's per-entry memory).
	MailboxEntries bool
	// Trimmed, on a family without a TTL, says what trims it: each position its keys hold must
	// be registered for that trim, and Candidates names where (the gate checks every one). With
	// TrimMembers the positions are a sorted set's members; otherwise the key is one position.
	Trimmed     string
	TrimMembers bool
	Candidates  func(key string, members []string) []Candidate
	// Conv, when set, says where the keys name conversations (conversations.go).
	Conv *Conversations
}

// Candidate is one registration a trimmed position needs: Member in the sorted set Set.
type Candidate struct{ Set, Member string }

// Match reports whether key belongs to f.
func (f Family) Match(key string) bool {
	return strings.HasPrefix(key, f.Prefix) && f.Pattern.MatchString(key)
}

// New builds a family whose pattern is prefix followed by rest (a regular expression for the
// part after the prefix), anchored at both ends. The prefix is quoted, so a store passes its
// own prefix constant and the declaration cannot drift from the key builder.
func New(name string, in Instance, layout, prefix, rest string) Family {
	return Family{Name: name, Instance: in, Layout: layout, Prefix: prefix,
		Pattern: regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + rest + `$`)}
}

// WithExample returns f with an example key built by the owner's key builder.
func (f Family) WithExample(key string) Family { f.Example = key; return f }

// Expiring returns f with keys that must carry a TTL.
func (f Family) Expiring() Family { f.Expires = true; return f }

// Permanent returns f with keys that must live forever, for the reason given.
func (f Family) Permanent(reason string) Family { f.Expires, f.Forever = false, reason; return f }

// KnownUnbounded returns f (which must expire) marked as a known gap: today's keys get no TTL
// and no trim, and until names what will bound them.
func (f Family) KnownUnbounded(until string) Family { f.Unbounded = until; return f }

// TrimmedBy returns f with keys that carry no TTL and are removed by a trim (by says which):
// cands maps a key (and, with members, its sorted set's members) to the trim registrations its
// positions need. A position without one would never be trimmed.
func (f Family) TrimmedBy(by string, members bool, cands func(key string, members []string) []Candidate) Family {
	f.Expires, f.Forever, f.Trimmed, f.TrimMembers, f.Candidates = false, "", by, members, cands
	return f
}

// Entries returns f with every member of its keys counted as one mailbox entry.
func (f Family) Entries() Family { f.MailboxEntries = true; return f }

// Validate checks one declaration.
func (f Family) Validate() error {
	switch {
	case f.Name == "" || f.Layout == "" || f.Prefix == "" || f.Pattern == nil:
		return fmt.Errorf("keyfamily: %q: name, layout, prefix and pattern are required", f.Name)
	case !f.Match(f.Example):
		return fmt.Errorf("keyfamily: %s: example %q does not match %s", f.Name, f.Example, f.Pattern)
	case f.Instance != Core && f.Instance != Mailbox:
		return fmt.Errorf("keyfamily: %s: unknown instance %q", f.Name, f.Instance)
	case f.Expires && f.Forever != "":
		return fmt.Errorf("keyfamily: %s: an expiring family has no reason to live forever", f.Name)
	case f.Trimmed != "" && (f.Expires || f.Forever != "" || f.Candidates == nil):
		return fmt.Errorf("keyfamily: %s: a trimmed family has no TTL, no reason to live forever and names its candidates", f.Name)
	case !f.Expires && f.Forever == "" && f.Trimmed == "":
		return fmt.Errorf("keyfamily: %s: keys without a TTL need the reason they may live forever", f.Name)
	case !f.Expires && f.Unbounded != "":
		return fmt.Errorf("keyfamily: %s: only an expiring family can be known unbounded", f.Name)
	case f.MailboxEntries && f.Instance != Mailbox:
		return fmt.Errorf("keyfamily: %s: mailbox entries live in the mailbox instance", f.Name)
	}
	return f.validateConversations()
}

// MatchingNames returns the names of the families key belongs to; a sound set of declarations
// gives exactly one for every key its owners write (the stores' tests check their own keys).
func MatchingNames(fams []Family, key string) []string {
	var out []string
	for _, f := range fams {
		if f.Match(key) {
			out = append(out, f.Name)
		}
	}
	return out
}
