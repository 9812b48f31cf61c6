package luascripttest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key is one key of a dump.
type Key struct {
	Name  string
	Type  string // TYPE: string, hash, zset, set, list, stream
	Value string // a canonical rendering of the whole value (hash fields and set members sorted)
	// ExpireAtMs is the key's absolute expiry (PEXPIRETIME), -1 without one.
	ExpireAtMs int64
}

// Keyspace is a dump of one database, sorted by key name.
type Keyspace []Key

// Dump reads every key of rdb's database (SCAN, TYPE, the value, PEXPIRETIME). It is not atomic:
// nothing else may write the database meanwhile.
func Dump(ctx context.Context, rdb *redis.Client) (Keyspace, error) {
	var names []string
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		names = append(names, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("luascripttest: scan: %w", err)
	}
	slices.Sort(names)
	names = slices.Compact(names) // SCAN may return a key twice
	out := make(Keyspace, 0, len(names))
	for _, n := range names {
		k, err := dumpKey(ctx, rdb, n)
		if err != nil {
			return nil, fmt.Errorf("luascripttest: dump %q: %w", n, err)
		}
		out = append(out, k)
	}
	return out, nil
}

func dumpKey(ctx context.Context, rdb *redis.Client, name string) (Key, error) {
	typ, err := rdb.Type(ctx, name).Result()
	if err != nil {
		return Key{}, err
	}
	var items []string
	switch typ {
	case "string":
		v, err := rdb.Get(ctx, name).Result()
		if err != nil {
			return Key{}, err
		}
		items = []string{strconv.Quote(v)}
	case "hash":
		m, err := rdb.HGetAll(ctx, name).Result()
		if err != nil {
			return Key{}, err
		}
		for f, v := range m {
			items = append(items, strconv.Quote(f)+"="+strconv.Quote(v))
		}
		slices.Sort(items)
	case "zset":
		zs, err := rdb.ZRangeWithScores(ctx, name, 0, -1).Result()
		if err != nil {
			return Key{}, err
		}
		for _, z := range zs {
			items = append(items, fmt.Sprintf("%q@%v", z.Member, z.Score))
		}
	case "set":
		if items, err = rdb.SMembers(ctx, name).Result(); err != nil {
			return Key{}, err
		}
		for i, m := range items {
			items[i] = strconv.Quote(m)
		}
		slices.Sort(items)
	case "list":
		if items, err = rdb.LRange(ctx, name, 0, -1).Result(); err != nil {
			return Key{}, err
		}
		for i, m := range items {
			items[i] = strconv.Quote(m)
		}
	case "stream":
		xs, err := rdb.XRange(ctx, name, "-", "+").Result()
		if err != nil {
			return Key{}, err
		}
		for _, x := range xs {
			items = append(items, fmt.Sprintf("%s%v", x.ID, x.Values))
		}
	case "none":
		return Key{Name: name, Type: typ, ExpireAtMs: -1}, nil // gone since SCAN: shows as a difference
	default:
		return Key{}, fmt.Errorf("type %s not rendered", typ)
	}
	exp, err := rdb.Do(ctx, "PEXPIRETIME", name).Int64()
	if err != nil {
		return Key{}, err
	}
	if exp < 0 {
		exp = -1
	}
	return Key{Name: name, Type: typ, Value: "[" + strings.Join(items, " ") + "]", ExpireAtMs: exp}, nil
}

// Diff lists how got differs from want, one line per key: a key only in one of them, another
// type or value, an expiry present in one only, or expiries further apart than tol (relative
// TTLs set by two runs a moment apart differ by that moment; absolute ones not at all). Empty
// when they agree.
func Diff(want, got Keyspace, tol time.Duration) []string {
	var out []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i].Name < got[j].Name):
			out = append(out, "- "+want[i].String())
			i++
		case i == len(want) || got[j].Name < want[i].Name:
			out = append(out, "+ "+got[j].String())
			j++
		default:
			w, g := want[i], got[j]
			if w.Type != g.Type || w.Value != g.Value || !expiresAlike(w.ExpireAtMs, g.ExpireAtMs, tol) {
				out = append(out, "~ "+w.Name+"\n    want "+w.describe()+"\n    got  "+g.describe())
			}
			i++
			j++
		}
	}
	return out
}

func expiresAlike(a, b int64, tol time.Duration) bool {
	if a < 0 || b < 0 {
		return a == b
	}
	d := a - b
	return max(d, -d) <= tol.Milliseconds()
}

// String renders the key on one line.
func (k Key) String() string { return k.Name + " " + k.describe() }

func (k Key) describe() string {
	exp := "no expiry"
	if k.ExpireAtMs >= 0 {
		exp = "expires " + time.UnixMilli(k.ExpireAtMs).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	v := k.Value
	if len(v) > 200 {
		v = v[:200] + "…"
	}
	return k.Type + " " + v + " (" + exp + ")"
}
