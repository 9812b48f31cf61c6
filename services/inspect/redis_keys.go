package inspect

import (
	"fmt"

	"github.com/qim-dev/qim/contract"

	"github.com/qim-dev/qim/services/archiver"
	"github.com/qim-dev/qim/services/gateway"
	"github.com/qim-dev/qim/services/gateway/ratelimit"
	"github.com/qim-dev/qim/services/internal/keyfamily"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/pushtoken"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
	"github.com/qim-dev/qim/services/room/modstore"
	"github.com/qim-dev/qim/services/session"
	"github.com/qim-dev/qim/services/writer/identity"
)

// RedisInstance names the Redis a key family lives in.
type RedisInstance string

// The two Redis instances of a deployment (docs/architecture.md, section 3).
const (
	RedisCore    = RedisInstance(keyfamily.Core)    // commit facts, history, identity, session state
	RedisMailbox = RedisInstance(keyfamily.Mailbox) // mailbox entries, watermarks, cursors
)

// RedisKeyFamily is one layout of Redis keys, as the store that writes it declares it next to
// its key builder. The redis-artifacts gate (gate 7) classifies every key of both instances by
// these and judges each family by its expiry rule; a key no family matches is an undeclared
// artifact. It is the public face of the stores' declarations, which live in packages gates/
// cannot import.
type RedisKeyFamily struct {
	Name     string        // "<owner>.<what>", e.g. "msgstore.history_record"
	Instance RedisInstance // where the keys live
	Layout   string        // for people: "qim:hrec:{tag}:<tenant>:<cid>:<seq>"
	Pattern  string        // the anchored regular expression Match applies
	Example  string        // a key built by the owner's key builder
	// Expires: every key must carry a TTL. Otherwise keys must live forever (a TTL on them is a
	// defect too), for the one-line reason in Forever.
	Expires bool
	Forever string
	// Unbounded, on an expiring family, names a known gap: today's keys get no TTL and no trim,
	// until what it says is built. The gate still fails on them.
	Unbounded string
	// MailboxEntries: every member of a key is one mailbox entry.
	MailboxEntries bool
	// Trimmed, on a family without a TTL, names the trim that removes its keys; every position
	// they hold must be registered for it (TrimCandidates). With TrimMembers the positions are
	// the members of each key's sorted set.
	Trimmed     string
	TrimMembers bool

	f keyfamily.Family
}

// TrimCandidates returns the (sorted set, member) registrations the positions of key (with its
// members, for a TrimMembers family) need; nil for a family that is not trimmed.
func (r RedisKeyFamily) TrimCandidates(key string, members []string) []keyfamily.Candidate {
	if r.f.Candidates == nil {
		return nil
	}
	return r.f.Candidates(key, members)
}

// Match reports whether key belongs to the family.
func (r RedisKeyFamily) Match(key string) bool { return r.f.Match(key) }

// RedisKeyFamilies returns every key family of every store, core instance first. An invalid
// declaration panics: it is a build defect, caught by this package's tests before a gate runs.
func RedisKeyFamilies() []RedisKeyFamily {
	var all []keyfamily.Family
	for _, fams := range [][]keyfamily.Family{msgstore.KeyFamilies(), identity.KeyFamilies(), gateway.KeyFamilies(),
		session.KeyFamilies(), archiver.KeyFamilies(), modstore.KeyFamilies(), ratelimit.KeyFamilies(), pushtoken.KeyFamilies(), mailboxstore.KeyFamilies()} {
		all = append(all, fams...)
	}
	out := make([]RedisKeyFamily, len(all))
	for i, f := range all {
		if err := f.Validate(); err != nil {
			panic(fmt.Sprintf("services: %v", err))
		}
		out[i] = RedisKeyFamily{Name: f.Name, Instance: RedisInstance(f.Instance), Layout: f.Layout,
			Pattern: f.Pattern.String(), Example: f.Example, Expires: f.Expires, Forever: f.Forever,
			Unbounded: f.Unbounded, MailboxEntries: f.MailboxEntries, Trimmed: f.Trimmed, TrimMembers: f.TrimMembers, f: f}
	}
	return out
}

// PushRegistrationKey is the core-Redis hash of a user's offline-push registrations (device →
// registration), for scenarios that check a registration was stored or removed.
func PushRegistrationKey(tenant contract.TenantID, user contract.UserID) string {
	return pushtoken.TokenKey(tenant, user)
}
