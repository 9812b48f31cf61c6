package room

import (
	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// pack turns one wake-up's items, in order, into RoomLinkDown messages: consecutive events of
// the same room merge into one RoomBroadcast of at most contract.RoomEventsBatchMax events, and
// a new RoomLinkDown starts once the current one holds maxBytes (an item is never split). Order
// is kept exactly, so a join answer stays between the events queued before and after it.
func pack(items []linkItem, maxBytes int) []*internalv1.RoomLinkDown {
	var (
		downs  []*internalv1.RoomLinkDown
		cur    *internalv1.RoomLinkDown
		bc     *internalv1.RoomBroadcast // the open broadcast, nil after a join answer
		bcRoom *room
		used   int
	)
	for _, it := range items {
		if cur == nil || used >= maxBytes {
			cur = &internalv1.RoomLinkDown{}
			downs = append(downs, cur)
			bc, used = nil, 0
		}
		used += it.size
		if it.answer != nil {
			cur.Items = append(cur.Items, &internalv1.RoomLinkItem{Item: &internalv1.RoomLinkItem_Joined{Joined: it.answer}})
			bc = nil
			continue
		}
		if it.removal != nil {
			cur.Items = append(cur.Items, &internalv1.RoomLinkItem{Item: &internalv1.RoomLinkItem_Removed{Removed: it.removal}})
			bc = nil
			continue
		}
		if bc == nil || bcRoom != it.room || len(bc.Events) >= contract.RoomEventsBatchMax {
			bc, bcRoom = &internalv1.RoomBroadcast{TenantId: it.room.tenantID, RoomId: it.room.roomID}, it.room
			cur.Items = append(cur.Items, &internalv1.RoomLinkItem{Item: &internalv1.RoomLinkItem_Events{Events: bc}})
		}
		bc.Events = append(bc.Events, it.ev)
	}
	return downs
}

// send is one wake-up of a link's sender: everything queued, packed and sent in order. It runs
// only on the Link handler's goroutine (gRPC allows one sender per stream).
func (s *Service) send(stream internalv1.RoomWriter_LinkServer, items []linkItem) error {
	for _, d := range pack(items, downBytesMax) {
		if err := stream.Send(d); err != nil {
			return err
		}
		s.m.sends.Inc()
		s.m.itemsSent.Add(float64(len(d.Items)))
	}
	return nil
}
