package presence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// schemaVersion is the PresenceEntry layout this package writes and reads.
const schemaVersion = 1

// ErrRecord is wrapped by every undecodable qim.presence record.
var ErrRecord = errors.New("presence: bad qim.presence record")

// Key is the compaction key of e: a device's entry per gateway ('d', tenant, user, device length,
// device, gateway), a boot announcement per gateway ('b', gateway).
//
// Why the gateway is part of a device's key: compaction keeps the last record per key. With the
// device alone, gateway A's late offline entry of an older session would be the last record of
// the key and erase gateway B's newer online entry from the compacted log, so a MailboxNode
// loading it later would think the device offline while B holds it.
func Key(e Entry) []byte {
	if e.User == 0 {
		return append([]byte{'b'}, e.Gateway...)
	}
	k := make([]byte, 0, 1+16+8+1+len(e.DeviceID)+len(e.Gateway))
	t := e.Tenant.Bytes()
	k = append(k, 'd')
	k = append(k, t[:]...)
	k = binary.BigEndian.AppendUint64(k, uint64(e.User))
	k = append(k, byte(len(e.DeviceID)))
	k = append(k, e.DeviceID...)
	return append(k, e.Gateway...)
}

// Partition is the qim.presence partition of a device entry: the user's mailbox shard, so the
// MailboxNode that owns a shard reads exactly its users' entries.
func Partition(shards contract.ShardCount, e Entry) int32 {
	return int32(shards.UserShard(e.Tenant, e.User))
}

// Encode returns the record value of e.
func Encode(e Entry, now time.Time) ([]byte, error) {
	m := &internalv1.PresenceEntry{SchemaVersion: schemaVersion, UserId: uint64(e.User), DeviceId: e.DeviceID,
		GatewayPushAddr: e.Gateway, GatewayBoot: e.Boot, SessionEpoch: e.Epoch, Online: e.Online, WrittenAtMs: now.UnixMilli()}
	if e.User != 0 {
		t := e.Tenant.Bytes()
		m.TenantId = t[:]
	}
	if err := check(e); err != nil {
		return nil, err
	}
	return proto.Marshal(m)
}

// Decode parses a record value. An entry this package could not have written is an error
// wrapping ErrRecord: the consumer counts and skips it (one bad record must not stop pushes for
// a whole shard, and nothing durable depends on presence).
func Decode(value []byte) (Entry, time.Time, error) {
	var m internalv1.PresenceEntry
	if err := proto.Unmarshal(value, &m); err != nil {
		return Entry{}, time.Time{}, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if m.GetSchemaVersion() != schemaVersion {
		return Entry{}, time.Time{}, fmt.Errorf("%w: schema_version %d, want %d", ErrRecord, m.GetSchemaVersion(), schemaVersion)
	}
	e := Entry{Device: Device{User: contract.UserID(m.GetUserId()), DeviceID: m.GetDeviceId()},
		Gateway: m.GetGatewayPushAddr(), Boot: m.GetGatewayBoot(), Epoch: m.GetSessionEpoch(), Online: m.GetOnline()}
	if e.User != 0 {
		t, err := contract.U128FromBytes(m.GetTenantId())
		if err != nil {
			return Entry{}, time.Time{}, fmt.Errorf("%w: tenant_id: %v", ErrRecord, err)
		}
		e.Tenant = t
	}
	if err := check(e); err != nil {
		return Entry{}, time.Time{}, err
	}
	return e, time.UnixMilli(m.GetWrittenAtMs()), nil
}

func check(e Entry) error {
	switch {
	case e.Gateway == "":
		return fmt.Errorf("%w: no gateway address", ErrRecord)
	case e.Boot == 0:
		return fmt.Errorf("%w: gateway boot 0", ErrRecord)
	case e.User == 0 && (e.DeviceID != "" || e.Epoch != 0 || e.Online):
		return fmt.Errorf("%w: a boot announcement carries a session", ErrRecord)
	case e.User != 0 && (e.DeviceID == "" || len(e.DeviceID) > contract.DeviceIDMaxBytes || e.Epoch == 0):
		return fmt.Errorf("%w: device entry needs a device id of 1..%d bytes and an epoch", ErrRecord, contract.DeviceIDMaxBytes)
	}
	return nil
}
