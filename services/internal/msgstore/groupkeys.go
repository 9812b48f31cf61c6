package msgstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/keyfamily"
)

// Group key prefixes. A group's keys carry the hash tag of its conversation's commit bucket, so
// they live on the Redis instance that allocates the conversation's seqs and the scripts that
// change membership and take a seq are one atomic EVALSHA.
const (
	groupPrefix   = "qim:grp:"    // hash: v (membership version), n (current members), owner, name, crq
	memberPrefix  = "qim:grpmem:" // hash: user id → intervals "j:l,j:l,j:" (the last open when it ends in ':')
	groupBoundDoc = "a group's membership lives as long as the group: its intervals decide who may read which " +
		"history, so expiring them would hand history to nobody or to everybody (invariant 11)"
)

// groupKeys are the key names of one group conversation.
type groupKeys struct {
	meta    string
	members string
}

func newGroupKeys(tenant contract.TenantID, conv contract.ConversationID) groupKeys {
	b := make([]byte, 0, maxKeyScratch)
	b = append(b, tagOf(tenant, conv)...)
	b = append(b, ':')
	b = appendHex16(b, tenant)
	b = append(b, ':')
	b = appendHex16(b, contract.U128(conv))
	suffix := string(b)
	return groupKeys{meta: groupPrefix + suffix, members: memberPrefix + suffix}
}

// parseIntervals decodes a member field ("0:", "0:15,20:"). Intervals must be ascending and
// disjoint, and only the last may be open.
func parseIntervals(s string) (contract.Membership, error) {
	if s == "" {
		return nil, fmt.Errorf("empty interval list")
	}
	parts := strings.Split(s, ",")
	out := make(contract.Membership, 0, len(parts))
	var prev uint64
	for i, p := range parts {
		j, l, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("interval %q lacks ':'", p)
		}
		joined, err := strconv.ParseUint(j, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("interval %q: joined: %w", p, err)
		}
		iv := contract.MemberInterval{Joined: joined}
		if l != "" {
			if iv.Left, err = strconv.ParseUint(l, 10, 63); err != nil || iv.Left <= joined {
				return nil, fmt.Errorf("interval %q: left must exceed joined", p)
			}
		} else if i != len(parts)-1 {
			return nil, fmt.Errorf("open interval %q is not the last", p)
		}
		if i > 0 && joined < prev {
			return nil, fmt.Errorf("interval %q overlaps its predecessor", p)
		}
		prev = iv.Left
		out = append(out, iv)
	}
	return out, nil
}

// groupKeyFamilies declares the group keys for the redis-artifacts gate.
func groupKeyFamilies() []keyfamily.Family {
	const t, h = tagPattern, hexPattern
	gk := newGroupKeys(contract.TenantID{Lo: 1}, contract.ConversationID{Hi: 2 << 60, Lo: 4})
	return []keyfamily.Family{
		keyfamily.New("msgstore.group", keyfamily.Core, "qim:grp:{tag}:<tenant>:<cid>", groupPrefix, t+":"+h+":"+h).
			WithExample(gk.meta).WithConversations(convInKey(groupPrefix)).Permanent(groupBoundDoc),
		keyfamily.New("msgstore.group_members", keyfamily.Core, "qim:grpmem:{tag}:<tenant>:<cid>", memberPrefix, t+":"+h+":"+h).
			WithExample(gk.members).WithConversations(convInKey(memberPrefix)).Permanent(groupBoundDoc),
	}
}
