package mailboxstore

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Storage key prefixes (see doc.go). Storage names of this package, not contract constants:
// nothing outside mailboxstore reads these keys.
const (
	epochPrefix  = "qim:mbepoch:"
	wmPrefix     = "qim:mbwm:"
	identPrefix  = "qim:mbdp:"
	bucketPrefix = "qim:mb:"
	indexPrefix  = "qim:mbix:"
	cursorPrefix = "qim:mbcur:"
	keyScratch   = 96
)

// appendTag appends the shard hash tag "{s<shard>}".
func appendTag(b []byte, shard uint32) []byte {
	b = append(b, "{s"...)
	b = strconv.AppendUint(b, uint64(shard), 10)
	return append(b, '}')
}

func shardKey(prefix string, shard uint32) string {
	b := make([]byte, 0, len(prefix)+8)
	return string(appendTag(append(b, prefix...), shard))
}

func epochKey(shard uint32) string { return shardKey(epochPrefix, shard) }

func watermarkKey(shard uint32) string { return shardKey(wmPrefix, shard) }

func identityKey(shard uint32, id contract.DispatchID) string {
	b := make([]byte, 0, keyScratch)
	b = append(appendTag(append(b, identPrefix...), shard), ':')
	raw := id.Bytes()
	return string(hex.AppendEncode(b, raw[:]))
}

// appendUser appends ":<tenant hex>:<user>" to a key under construction.
func appendUser(b []byte, tenant contract.TenantID, user contract.UserID) []byte {
	raw := tenant.Bytes()
	b = hex.AppendEncode(append(b, ':'), raw[:])
	return strconv.AppendUint(append(b, ':'), uint64(user), 10)
}

// userKeys are the keys of one user's mailbox: the day-bucket prefix (bucket = prefix ‖ day) and
// the day index.
type userKeys struct {
	bucket string // qim:mb:{s}:<tenant>:<user>:
	index  string // qim:mbix:{s}:<tenant>:<user>
}

func newUserKeys(shard uint32, tenant contract.TenantID, user contract.UserID) userKeys {
	b := make([]byte, 0, keyScratch)
	b = appendUser(appendTag(append(b, bucketPrefix...), shard), tenant, user)
	bucket := string(append(b, ':'))
	b = b[:0]
	b = appendUser(appendTag(append(b, indexPrefix...), shard), tenant, user)
	return userKeys{bucket: bucket, index: string(b)}
}

func (k userKeys) bucketKey(day int64) string {
	b := make([]byte, 0, len(k.bucket)+8)
	return string(strconv.AppendInt(append(b, k.bucket...), day, 10))
}

func cursorKey(shard uint32, tenant contract.TenantID, user contract.UserID, device string) string {
	b := make([]byte, 0, keyScratch+len(device))
	b = appendUser(appendTag(append(b, cursorPrefix...), shard), tenant, user)
	return string(append(append(b, ':'), device...))
}

// appendSeq appends the 8-byte big-endian form every script and member uses for a mailbox_seq.
func appendSeq(b []byte, s contract.MailboxSeq) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(s))
}

// parseSeq reads an 8-byte big-endian mailbox_seq and checks bit 63.
func parseSeq(b string) (contract.MailboxSeq, error) {
	if len(b) != 8 {
		return 0, ErrCorrupt
	}
	return contract.NewMailboxSeq(binary.BigEndian.Uint64([]byte(b)))
}

// KeyFamilies declares every key this package writes (all in the mailbox Redis), for the
// redis-artifacts gate (inspect.RedisKeyFamilies). Entries, identities, day indexes and cursors
// expire with contract.MailboxRetention (doc.go); the per-shard epoch and watermark must not.
func KeyFamilies() []keyfamily.Family {
	const s, h, n, dev = `\{s[0-9]+\}`, `[0-9a-f]{32}`, `[0-9]+`, `(?s:.+)`
	mb := keyfamily.Mailbox
	tenant := contract.TenantID{Lo: 1}
	uk := newUserKeys(3, tenant, 2)
	return []keyfamily.Family{
		keyfamily.New("mailboxstore.shard_epoch", mb, "qim:mbepoch:{s}", epochPrefix, s).WithExample(epochKey(3)).
			Permanent("one per shard: expired, shard_epoch would restart at 1 and reissue mailbox_seqs (invariant 7)"),
		keyfamily.New("mailboxstore.watermark", mb, "qim:mbwm:{s}", wmPrefix, s).WithExample(watermarkKey(3)).
			Permanent("one per shard: the materialized watermark a MailboxNode resumes from (invariant 8)"),
		keyfamily.New("mailboxstore.dispatch_identity", mb, "qim:mbdp:{s}:<dispatch_id>", identPrefix, s+":"+h).
			WithExample(identityKey(3, contract.DispatchID{Lo: 4})).Expiring(),
		keyfamily.New("mailboxstore.day_bucket", mb, "qim:mb:{s}:<tenant>:<user>:<day>", bucketPrefix,
			s+":"+h+":"+n+":"+n).WithExample(uk.bucketKey(20000)).Expiring().Entries().
			WithConversations(keyfamily.Conversations{In: keyfamily.ZSetMember, OfMember: memberConversation}),
		keyfamily.New("mailboxstore.day_index", mb, "qim:mbix:{s}:<tenant>:<user>", indexPrefix, s+":"+h+":"+n).
			WithExample(uk.index).Expiring(),
		keyfamily.New("mailboxstore.cursor", mb, "qim:mbcur:{s}:<tenant>:<user>:<device>", cursorPrefix,
			s+":"+h+":"+n+":"+dev).WithExample(cursorKey(3, tenant, 2, "phone")).Expiring(),
	}
}
