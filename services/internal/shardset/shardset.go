// Package shardset is the configured set of mailbox shards one instance serves: the MailboxNode
// materializes them (QIM_MAILBOX_OWNED_SHARDS) and the SessionProjection projects them
// (QIM_SESSION_OWNED_SHARDS). Static assignment by configuration is phase one of placement
// (ADR-0026); contract.ShardCount.InstanceShards gives the ranges the gateways route by.
package shardset

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// ErrShardSet is wrapped by every parse and validation error.
var ErrShardSet = errors.New("shard set")

// Set is a set of mailbox shards, written "0-31", "3" or "0,4,8-11" in the environment.
type Set []uint32

// UnmarshalText parses the environment form (see Parse).
func (s *Set) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// String is the environment form, ranges collapsed ("0-31,40").
func (s Set) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", s[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		}
		i = j + 1
	}
	return b.String()
}

// All is every shard of n.
func All(n contract.ShardCount) Set {
	out := make(Set, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// Normalize returns the set sorted, or every shard of n when s is empty; it refuses duplicates
// and shards the topic does not have, naming the variable.
func Normalize(s Set, n contract.ShardCount, name string) (Set, error) {
	if len(s) == 0 {
		return All(n), nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	for i, v := range out {
		if v >= uint32(n) || (i > 0 && out[i-1] == v) {
			return nil, fmt.Errorf("%w: %s: shard %d duplicated or not below QIM_MAILBOX_SHARD_COUNT=%d", ErrShardSet, name, v, n)
		}
	}
	return out, nil
}

// Parse parses "0-31", "3", "0,4,8-11" (ranges inclusive). Empty means none (Normalize then
// takes every shard); an empty element ("0,,4", a trailing comma) is a typo and refused.
// Bounds against the shard count are checked by Normalize.
func Parse(s string) (Set, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out Set
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		}
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("%w %q: bad element %q (want a shard or an inclusive range such as 8-11)", ErrShardSet, s, part)
		}
		for v := a; v <= b; v++ {
			out = append(out, uint32(v))
		}
	}
	return out, nil
}

// Contains reports whether shard is in the normalized (sorted) set.
func (s Set) Contains(shard uint32) bool {
	_, ok := slices.BinarySearch(s, shard)
	return ok
}
