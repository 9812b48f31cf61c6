package mailboxstore

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/qim-dev/qim/contract"
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
