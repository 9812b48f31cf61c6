package keyspace_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/keyspace"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/inspect"
)

// Every family that names conversations is read where its owner says: a room conversation in a
// key's name, a session-list member, a read-watermark field or a mailbox entry is counted as a
// room and its key named, while a group conversation beside it is counted and not a room. The
// check gate 7 makes of this (rooms leave no trace) can therefore fail.
func TestTakeFindsRoomConversations(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := context.Background()
	core, mailbox := client(t, ep.RedisCore, scratchDB), client(t, ep.RedisMailbox, scratchDB)
	for _, rdb := range []*redis.Client{core, mailbox} {
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	room, err := contract.RoomConversationID(contract.U128{Lo: 77})
	if err != nil {
		t.Fatal(err)
	}
	group, err := contract.GroupConversationID(contract.U128{Lo: 78})
	if err != nil {
		t.Fatal(err)
	}
	fams := inspect.RedisKeyFamilies()
	roomKeys := map[string]string{} // family → the key naming the room
	for _, f := range fams {
		if !f.NamesConversations() {
			continue
		}
		rdb := core
		if f.Instance == inspect.RedisMailbox {
			rdb = mailbox
		}
		roomKeys[f.Name] = writeNaming(t, ctx, rdb, f, room)
		writeNaming(t, ctx, rdb, f, group)
	}
	if len(roomKeys) < 9 {
		t.Fatalf("%d families name conversations, want the 9 of msgstore, session and mailboxstore: %v", len(roomKeys), roomKeys)
	}
	for _, in := range []struct {
		inst inspect.RedisInstance
		rdb  *redis.Client
	}{{inspect.RedisCore, core}, {inspect.RedisMailbox, mailbox}} {
		inv, err := keyspace.Take(ctx, in.rdb, in.inst, fams, keyspace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range inv.Families {
			want, ok := roomKeys[f.Name]
			switch {
			case !ok && (f.Conversations != 0 || f.Rooms != 0):
				t.Errorf("%s names no conversations, yet %d read, %d rooms", f.Name, f.Conversations, f.Rooms)
			case ok && (f.Conversations != 2 || f.Rooms != 1 || f.Unreadable != 0):
				t.Errorf("%s: %d conversations, %d rooms, %d unreadable; want 2, 1, 0", f.Name, f.Conversations, f.Rooms, f.Unreadable)
			case ok && (len(f.RoomKeys) != 1 || f.RoomKeys[0] != want):
				t.Errorf("%s: room keys %q, want [%q]", f.Name, f.RoomKeys, want)
			}
		}
	}
}

// writeNaming writes a key of f that names conv, in its name when f's names hold one, else as
// one more member of f's example key, and returns the key.
func writeNaming(t *testing.T, ctx context.Context, rdb *redis.Client, f inspect.RedisKeyFamily, conv contract.ConversationID) string {
	t.Helper()
	key := f.Example
	if old, ok := f.ConversationInKey(f.Example); ok {
		key = strings.Replace(f.Example, hexOf(old), hexOf(conv), 1)
	}
	raw := contract.U128(conv).Bytes()
	var err error
	switch f.ConversationMembers() {
	case inspect.HashField:
		err = rdb.HSet(ctx, key, string(raw[:]), "1").Err()
	case inspect.ZSetMember:
		m := string(raw[:])
		if f.MailboxEntries {
			m = bucketMember(t, conv)
		}
		err = rdb.ZAdd(ctx, key, redis.Z{Member: m}).Err()
	default:
		if f.TrimMembers { // a sorted set of positions
			err = rdb.ZAdd(ctx, key, redis.Z{Member: "1"}).Err()
		} else {
			err = rdb.Set(ctx, key, "v", 0).Err()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func hexOf(c contract.ConversationID) string {
	b := contract.U128(c).Bytes()
	return hex.EncodeToString(b[:])
}

// bucketMember is a mailbox day-bucket member as materialize.lua stores it: seq (8 bytes BE) ‖
// event_type (4 bytes BE) ‖ the MailboxEntry.
func bucketMember(t *testing.T, conv contract.ConversationID) string {
	t.Helper()
	raw := contract.U128(conv).Bytes()
	e, err := proto.Marshal(&internalv1.MailboxEntry{EventType: 1, MailboxSeq: 5, ConversationId: raw[:]})
	if err != nil {
		t.Fatal(err)
	}
	head := binary.BigEndian.AppendUint64(nil, 5)
	head = binary.BigEndian.AppendUint32(head, 1)
	return string(head) + string(e)
}
