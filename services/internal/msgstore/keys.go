package msgstore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Storage key prefixes. They are storage names of this package, not contract constants: nothing
// outside msgstore reads these keys directly.
const (
	commitPrefix  = "qim:cmt:"
	shrunkPrefix  = "qim:cmtshrunk:"
	seqPrefix     = "qim:cseq:"
	hidxPrefix    = "qim:hidx:"
	hrecPrefix    = "qim:hrec:"
	pendingKey    = "qim:cmtpending"
	htrimPrefix   = "qim:htrim:"
	hfloorPrefix  = "qim:hfloor:"
	ownerPrefix   = "qim:cmidown:"
	hexIDLen      = 32 // 16 bytes as lowercase hex
	maxKeyScratch = 128
)

// keyTags holds the 256 commit-bucket hash tags, computed once from contract.CommitBucket.KeyTag
// so the hot path never formats a tag and the tag format has one source of truth.
var keyTags = func() (t [contract.CommitBucketCount]string) {
	for i := range t {
		t[i] = contract.CommitBucket(i).KeyTag()
	}
	return t
}()

// tagOf is the hash tag of a conversation's commit bucket.
func tagOf(tenant contract.TenantID, conv contract.ConversationID) string {
	return keyTags[contract.ConversationCommitBucket(tenant, conv)]
}

// appendHex16 appends the 32-digit lowercase hex form of a u128 id.
func appendHex16(dst []byte, u contract.U128) []byte {
	b := u.Bytes()
	return hex.AppendEncode(dst, b[:])
}

// commitKey is the commit hash key of k. The conversation is not part of the key (the
// idempotency key is (tenant, sender, client_message_id)); it only chooses the hash tag.
func commitKey(k CommitKey) string { return commitKeyTagged(k, tagOf(k.Tenant, k.Conversation)) }

// commitKeyTagged is commitKey with the tag already derived (one BLAKE3 per intent, not two).
func commitKeyTagged(k CommitKey, tag string) string {
	b := make([]byte, 0, maxKeyScratch)
	b = append(b, commitPrefix...)
	b = append(b, tag...)
	b = append(b, ':')
	b = appendHex16(b, k.Tenant)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(k.Sender), 10)
	b = append(b, ':')
	b = appendHex16(b, contract.U128(k.ClientMessageID))
	return string(b)
}

// shrunkKey is where mark_committed.lua builds the shrunk COMMITTED hash before it RENAMEs it
// over commitKey (the same name after the prefix, so the same hash tag). It exists only inside
// the script, or after a mark that died between the two writes, until the next mark of the
// still-RECORDED commit (its retry or the recovery loop) overwrites and consumes it.
func shrunkKey(commitKey string) string { return shrunkPrefix + commitKey[len(commitPrefix):] }

// convKeys are the per-conversation key names a script or a history read needs. The record and
// index keys end in ':' and get the seq or bucket appended (in Lua or by appendSeqKey).
type convKeys struct {
	seq    string // qim:cseq:{tag}:<tenant>:<cid>
	hrec   string // qim:hrec:{tag}:<tenant>:<cid>:
	hidx   string // qim:hidx:{tag}:<tenant>:<cid>:
	suffix string // {tag}:<tenant>:<cid>, for the keys only some callers need (built on demand)
}

// floor is the conversation's hot floor key qim:hfloor:{tag}:<tenant>:<cid>.
func (k convKeys) floor() string { return hfloorPrefix + k.suffix }

// htrim is the commit bucket's trim candidates key qim:htrim:{tag}.
func (k convKeys) htrim() string { return htrimPrefix + k.suffix[:strings.IndexByte(k.suffix, ':')] }

// trimConv is <tenant>:<cid>, the conversation part of a trim candidate.
func (k convKeys) trimConv() string { return k.suffix[strings.IndexByte(k.suffix, ':')+1:] }

func newConvKeys(tenant contract.TenantID, conv contract.ConversationID) convKeys {
	return convKeysTagged(tenant, conv, tagOf(tenant, conv))
}

func convKeysTagged(tenant contract.TenantID, conv contract.ConversationID, tag string) convKeys {
	// The suffix "{tag}:<tenant>:<cid>" is built once and shared by the three keys.
	b := make([]byte, 0, maxKeyScratch)
	b = append(b, tag...)
	b = append(b, ':')
	b = appendHex16(b, tenant)
	b = append(b, ':')
	b = appendHex16(b, contract.U128(conv))
	suffix := string(b)
	return convKeys{
		seq:    seqPrefix + suffix,
		hrec:   hrecPrefix + suffix + ":",
		hidx:   hidxPrefix + suffix + ":",
		suffix: suffix,
	}
}

// appendNumKey appends a decimal number to a prefix from convKeys (a record or bucket key).
func appendNumKey(dst []byte, prefix string, n uint64) []byte {
	dst = append(dst, prefix...)
	return strconv.AppendUint(dst, n, 10)
}

// parsedCommitKey is what a commit key name says by itself; the conversation lives in the hash.
type parsedCommitKey struct {
	tag    string
	tenant contract.TenantID
	sender contract.UserID
	cmid   contract.ClientMessageID
}

// parseCommitKey reverses commitKey. The recovery loop depends on it, so every part is checked.
func parseCommitKey(s string) (parsedCommitKey, error) {
	rest, ok := strings.CutPrefix(s, commitPrefix)
	if !ok {
		return parsedCommitKey{}, fmt.Errorf("msgstore: commit key %q lacks prefix %q", s, commitPrefix)
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 4 || len(parts[1]) != hexIDLen || len(parts[3]) != hexIDLen {
		return parsedCommitKey{}, fmt.Errorf("msgstore: commit key %q is not tag:tenant:sender:cmid", s)
	}
	tenant, err := contract.ParseU128(parts[1])
	if err != nil {
		return parsedCommitKey{}, fmt.Errorf("msgstore: commit key tenant: %w", err)
	}
	sender, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return parsedCommitKey{}, fmt.Errorf("msgstore: commit key sender: %w", err)
	}
	cmid, err := contract.ParseU128(parts[3])
	if err != nil {
		return parsedCommitKey{}, fmt.Errorf("msgstore: commit key client_message_id: %w", err)
	}
	return parsedCommitKey{tag: parts[0], tenant: tenant, sender: contract.UserID(sender),
		cmid: contract.ClientMessageID(cmid)}, nil
}

// ownerKey names the owner of (tenant, sender, client_message_id) independent of the conversation:
// its value is the commit hash key that holds the cmid, and it expires with that commit. With
// several core instances it lives on the conversation's instance, so cross-conversation reuse is
// only detected within one instance (phase one runs one).
func ownerKey(k CommitKey) string {
	b := make([]byte, 0, maxKeyScratch)
	b = append(b, ownerPrefix...)
	b = appendHex16(b, k.Tenant)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(k.Sender), 10)
	b = append(b, ':')
	b = appendHex16(b, contract.U128(k.ClientMessageID))
	return string(b)
}

// Pattern pieces of this package's key names (see keyTags, appendHex16, strconv.AppendUint).
const (
	tagPattern = `\{b[0-9]{3}\}`
	hexPattern = `[0-9a-f]{32}`
	numPattern = `[0-9]+`
)

// hotHistoryBound is what bounds the hot history: the writer's trim below the archive watermark,
// which runs only with the tiered backend (a CQL archive configured).
const hotHistoryBound = "the writer's hot-tier trim below the archive watermark (tiered backend, ADR-0022; " +
	"the redis backend never trims)"

// recordCandidates is the trim registration of a hot record key: qim:hrec:{tag}:<tenant>:<cid>:<seq>
// needs <tenant>:<cid>:<seq> in qim:htrim:{tag} (written by mark_committed.lua).
func recordCandidates(key string, _ []string) []keyfamily.Candidate {
	tag, rest, ok := strings.Cut(strings.TrimPrefix(key, hrecPrefix), ":")
	if !ok {
		return nil
	}
	return []keyfamily.Candidate{{Set: htrimPrefix + tag, Member: rest}}
}

// indexCandidates is the trim registration of every seq in a hot index bucket
// qim:hidx:{tag}:<tenant>:<cid>:<bucket>.
func indexCandidates(key string, members []string) []keyfamily.Candidate {
	tag, rest, ok := strings.Cut(strings.TrimPrefix(key, hidxPrefix), ":")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return nil
	}
	out := make([]keyfamily.Candidate, len(members))
	for j, m := range members {
		out[j] = keyfamily.Candidate{Set: htrimPrefix + tag, Member: rest[:i+1] + m}
	}
	return out
}

// KeyFamilies declares every key this package writes (all in the core Redis), for the
// redis-artifacts gate (inspect.RedisKeyFamilies). A commit hash and its owner key get their
// expiry at COMMITTED; until then they are an unfinished commit that a retry or the recovery
// loop finishes, so one without a TTL after the load has settled is a stuck commit. A shrunk
// commit is renamed away by the script that builds it and never gets a TTL of its own, so the
// gate reports any it finds: a mark that died and was never finished.
func KeyFamilies() []keyfamily.Family {
	const t, h, n = tagPattern, hexPattern, numPattern
	core := keyfamily.Core
	ex := CommitKey{Tenant: contract.TenantID{Lo: 1}, Sender: 2, ClientMessageID: contract.ClientMessageID{Lo: 3},
		Conversation: contract.ConversationID{Lo: 4}}
	ck := newConvKeys(ex.Tenant, ex.Conversation)
	return append(groupKeyFamilies(),
		keyfamily.New("msgstore.commit", core, "qim:cmt:{tag}:<tenant>:<sender>:<cmid>", commitPrefix,
			t+":"+h+":"+n+":"+h).WithExample(commitKey(ex)).Expiring(),
		keyfamily.New("msgstore.commit_shrunk", core, "qim:cmtshrunk:{tag}:<tenant>:<sender>:<cmid>", shrunkPrefix,
			t+":"+h+":"+n+":"+h).WithExample(shrunkKey(commitKey(ex))).Expiring(),
		keyfamily.New("msgstore.cmid_owner", core, "qim:cmidown:<tenant>:<sender>:<cmid>", ownerPrefix,
			h+":"+n+":"+h).WithExample(ownerKey(ex)).Expiring(),
		keyfamily.New("msgstore.conversation_seq", core, "qim:cseq:{tag}:<tenant>:<cid>", seqPrefix, t+":"+h+":"+h).
			WithExample(ck.seq).WithConversations(convInKey(seqPrefix)).
			Permanent("the conversation_seq counter: expired, it would restart and hand out used seqs again (invariant 3)"),
		keyfamily.New("msgstore.history_index", core, "qim:hidx:{tag}:<tenant>:<cid>:<bucket>", hidxPrefix,
			t+":"+h+":"+h+":"+n).WithExample(string(appendNumKey(nil, ck.hidx, 0))).WithConversations(convInKey(hidxPrefix)).TrimmedBy(hotHistoryBound, true, indexCandidates),
		keyfamily.New("msgstore.history_record", core, "qim:hrec:{tag}:<tenant>:<cid>:<seq>", hrecPrefix,
			t+":"+h+":"+h+":"+n).WithExample(string(appendNumKey(nil, ck.hrec, 1))).WithConversations(convInKey(hrecPrefix)).TrimmedBy(hotHistoryBound, false, recordCandidates),
		keyfamily.New("msgstore.trim_candidates", core, "qim:htrim:{tag}", htrimPrefix, t).WithExample(ck.htrim()).
			Permanent("one per commit bucket, the hot history's trim candidates by committed_at; it is as bounded as the hot history it trims"),
		keyfamily.New("msgstore.hot_floor", core, "qim:hfloor:{tag}:<tenant>:<cid>", hfloorPrefix, t+":"+h+":"+h).
			WithExample(ck.floor()).WithConversations(convInKey(hfloorPrefix)).
			Permanent("the conversation's hot floor F: expired, reads of trimmed seqs would go to Redis and find silent holes"),
		keyfamily.New("msgstore.amendment_index", core, "qim:amend:{tag}:<tenant>:<cid>", amendPrefix, t+":"+h+":"+h).
			WithExample(ck.amend()).WithConversations(convInKey(amendPrefix)).Expiring(),
		keyfamily.New("msgstore.reaction_counts", core, "qim:react:{tag}:<tenant>:<cid>", reactPrefix, t+":"+h+":"+h).
			WithExample(ck.reactSum()).WithConversations(convInKey(reactPrefix)).Expiring(),
		keyfamily.New("msgstore.reaction_users", core, "qim:reactusr:{tag}:<tenant>:<cid>", reactUsrPrefix, t+":"+h+":"+h).
			WithExample(ck.reactUsers()).WithConversations(convInKey(reactUsrPrefix)).Expiring(),
		keyfamily.New("msgstore.recovery_index", core, "qim:cmtpending", pendingKey, "").WithExample(pendingKey).
			Permanent("one per instance, the index of unfinished commits; it empties (and Redis drops it) as they finish"),
	)
}

// convInKey reads the conversation of a "<prefix>{tag}:<tenant>:<cid>…" key, for the
// redis-artifacts gate's check that no room conversation reaches Redis.
func convInKey(prefix string) keyfamily.Conversations {
	return keyfamily.Conversations{InKey: keyfamily.HexFieldInKey(prefix, 2)}
}
