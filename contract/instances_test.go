package contract

import (
	"fmt"
	"testing"
)

// Every shard is served by exactly one instance, InstanceShards lists exactly the shards
// ShardInstance places on it, and the ranges are contiguous and cover every shard in order.
func TestInstanceShardsPartitionTheShards(t *testing.T) {
	for _, count := range []int{1, 2, 8, 64, 256} {
		n, err := NewShardCount(count)
		if err != nil {
			t.Fatal(err)
		}
		for _, inst := range []int{1, 2, 3, 5, 64, 300} {
			next := uint32(0)
			for i := 0; i < inst; i++ {
				first, last, ok := n.InstanceShards(i, inst)
				if !ok {
					continue
				}
				if first != next || last < first {
					t.Fatalf("count %d instances %d: instance %d serves %d-%d, want it to start at %d", count, inst, i, first, last, next)
				}
				for s := first; s <= last; s++ {
					if got := n.ShardInstance(s, inst); got != i {
						t.Fatalf("count %d instances %d: shard %d in instance %d's range, ShardInstance says %d", count, inst, s, i, got)
					}
				}
				next = last + 1
			}
			if next != uint32(count) {
				t.Fatalf("count %d instances %d: ranges end at %d, want %d", count, inst, next, count)
			}
		}
	}
}

func TestInstanceShardSpec(t *testing.T) {
	n, _ := NewShardCount(64)
	for _, c := range []struct {
		i, inst int
		want    string
	}{{0, 1, "0-63"}, {0, 2, "0-31"}, {1, 2, "32-63"}, {2, 3, "43-63"}, {2, 2, ""}, {-1, 2, ""}} {
		if got := n.InstanceShardSpec(c.i, c.inst); got != c.want {
			t.Errorf("InstanceShardSpec(%d, %d) = %q, want %q", c.i, c.inst, got, c.want)
		}
	}
}

// The score depends on the tenant, the conversation and the instance, so conversations spread
// over instances; it is stable (gateways must agree), pinned by a known value.
func TestWriterRendezvousSpreadsAndIsStable(t *testing.T) {
	tenant := TenantID{Lo: 7}
	addrs := []string{"10.0.0.1:7101", "10.0.0.2:7101", "10.0.0.3:7101"}
	wins := make([]int, len(addrs))
	for c := uint64(1); c <= 3000; c++ {
		conv := DirectConversationID(tenant, UserID(c), UserID(c+100000))
		best, bestScore := 0, uint64(0)
		for i, a := range addrs {
			if s := WriterRendezvous(tenant, conv, a); s > bestScore {
				best, bestScore = i, s
			}
		}
		wins[best]++
	}
	for i, w := range wins {
		if w < 800 || w > 1200 {
			t.Fatalf("instance %d won %d of 3000 conversations: %v", i, w, wins)
		}
	}
	conv := DirectConversationID(tenant, 1, 2)
	if WriterRendezvous(tenant, conv, addrs[0]) == WriterRendezvous(TenantID{Lo: 8}, conv, addrs[0]) {
		t.Fatal("the score ignores the tenant")
	}
	got := fmt.Sprintf("%016x", WriterRendezvous(tenant, conv, addrs[0]))
	if got != pinnedRendezvous {
		t.Fatalf("WriterRendezvous changed: %s (pinned %s); a change reshuffles every gateway's affinity during a rolling upgrade", got, pinnedRendezvous)
	}
}

const pinnedRendezvous = "ab80b6decc48b554"
