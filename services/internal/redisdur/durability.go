// Package redisdur proves, at start-up, that a Redis instance is fit for the data a service puts
// in it: version, standalone mode, persistence and eviction policy. Services refuse to start on
// an unfit instance, naming the setting and the fix. It only reads (INFO, CONFIG GET).
package redisdur

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Setting is one CONFIG GET value a profile requires.
type Setting struct {
	Name    string
	Accept  []string // values that pass
	Relaxed []string // values that also pass in a relaxed check against a loopback instance
}

// Profile is what one kind of data needs from its Redis.
type Profile struct {
	Role     string // "commit facts", "mailboxes", ...: names the instance in errors
	Var      string // the variable holding its address, named when it cannot be reached
	Need     string // one line: why, for the error message
	Settings []Setting
}

// CommitFacts is what the ConversationWriter's and gateway's core Redis must run. A host crash
// with appendfsync everysec loses up to a second of writes, which lets the conversation_seq
// counter and HLC windows go back and reuse values already acknowledged and archived;
// no-appendfsync-on-rewrite=yes reopens that window during every AOF rewrite; eviction would drop
// commit facts. Relaxed (development, loopback only) accepts everysec and appendonly no.
var CommitFacts = Profile{
	Role: "commit facts",
	Var:  "QIM_REDIS_ADDR",
	Need: "commit facts need AOF with appendfsync always on a standalone, non-evicting Redis >= 7.0",
	Settings: []Setting{
		{"appendonly", []string{"yes"}, []string{"no"}},
		{"appendfsync", []string{"always"}, []string{"everysec"}},
		{"no-appendfsync-on-rewrite", []string{"no"}, nil},
		{"maxmemory-policy", []string{"noeviction"}, nil},
	},
}

// Mailboxes is what a MailboxNode's Redis must run. everysec is enough: a host crash may lose the
// last second of mailbox writes, but the watermark written in the same script rolls back with
// them, so the restarted node replays those dispatch records and rebuilds the same entries at the
// same mailbox_seq. Eviction, in contrast, could drop an entry and leave the watermark past it.
var Mailboxes = Profile{
	Role: "mailboxes",
	Var:  "QIM_MAILBOX_REDIS_ADDR",
	Need: "mailboxes need a standalone, non-evicting Redis >= 7.0 with AOF and appendfsync everysec or always",
	Settings: []Setting{
		{"appendonly", []string{"yes"}, nil},
		{"appendfsync", []string{"everysec", "always"}, nil},
		{"maxmemory-policy", []string{"noeviction"}, nil},
	},
}

// Error names the setting that makes an instance unfit, what it is and what it must be.
type Error struct {
	Role    string
	Setting string
	Got     string
	Want    string
	Need    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("redisdur: redis holding %s has %s = %q, want %s (fix: set it in redis.conf or CONFIG SET + "+
		"CONFIG REWRITE; %s)", e.Role, e.Setting, e.Got, e.Want, e.Need)
}

// ErrUnreachable wraps the failure of a Check that never got an answer from Redis (refused
// connection, timeout, closed connection): the instance may come back, so start-up may wait for
// it. Its fitness is unknown, never assumed.
var ErrUnreachable = errors.New("redisdur: redis unreachable")

// Check proves rdb fits p: redis_version ≥ 7.0, cluster disabled (scripts build key names inside
// the script), and every setting of p. An INFO or CONFIG GET that Redis refuses (renamed command,
// missing permission) fails closed as an *Error; one that got no answer at all wraps
// ErrUnreachable. relaxed additionally accepts each setting's Relaxed values, but only when the
// client's address is loopback: never against a real deployment.
func Check(ctx context.Context, rdb *redis.Client, p Profile, relaxed bool) error {
	info, err := rdb.Info(ctx, "server", "cluster").Result()
	if err != nil {
		return p.unreadable(rdb, "INFO", "readable", err)
	}
	conf := map[string]string{}
	for _, s := range p.Settings {
		got, err := rdb.ConfigGet(ctx, s.Name).Result()
		if err != nil {
			return p.unreadable(rdb, s.Name, "readable by CONFIG GET", err)
		}
		if v, ok := got[s.Name]; ok {
			conf[s.Name] = v
		}
	}
	return p.check(parseInfo(info), conf, relaxed && isLoopback(rdb.Options()))
}

// unreadable is the error of a query that failed: an *Error when Redis answered with an error
// reply, ErrUnreachable when it did not answer.
func (p Profile) unreadable(rdb *redis.Client, setting, want string, err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		return p.fail(setting, "unreadable: "+err.Error(), want)
	}
	hint := ""
	if errors.Is(err, io.EOF) && rdb.Options().TLSConfig == nil {
		// A TLS-only Redis closes a plaintext connection without a word: name the likely fix.
		hint = " (a Redis that requires TLS closes plaintext connections: set QIM_REDIS_TLS_CA if it does)"
	}
	return fmt.Errorf("%w: the %s Redis at %s=%s: %w%s", ErrUnreachable, p.Role, p.Var, rdb.Options().Addr, err, hint)
}

// Refused reports whether err is a verdict on the instance, which waiting cannot change: an
// *Error, or an error reply (NOAUTH, WRONGPASS, an unknown command) other than the ones Redis
// gives while it cannot serve yet (LOADING a dataset, BUSY running a script, MASTERDOWN,
// TRYAGAIN). A failure to reach the instance is not a refusal.
func Refused(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	for _, transient := range []string{"LOADING ", "BUSY ", "MASTERDOWN ", "TRYAGAIN "} {
		if strings.HasPrefix(reply.Error(), transient) {
			return false
		}
	}
	return true
}

func (p Profile) fail(setting, got, want string) *Error {
	return &Error{Role: p.Role, Setting: setting, Got: got, Want: want, Need: p.Need}
}

// check is Check's decision over INFO fields and CONFIG GET values, without I/O.
func (p Profile) check(info, conf map[string]string, relaxed bool) error {
	if v := info["redis_version"]; !versionAtLeast(v, 7, 0) {
		return p.fail("redis_version", v, ">= 7.0")
	}
	if v := info["cluster_enabled"]; v != "0" {
		return p.fail("cluster-enabled", v, "no (cluster_enabled:0)")
	}
	for _, s := range p.Settings {
		v, ok := conf[s.Name]
		if !ok {
			v = "(absent)"
		}
		if ok && (contains(s.Accept, v) || (relaxed && contains(s.Relaxed, v))) {
			continue
		}
		return p.fail(s.Name, v, strings.Join(s.Accept, " or "))
	}
	return nil
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func parseInfo(info string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			kv[k] = v
		}
	}
	return kv
}

// versionAtLeast compares the major.minor of a redis_version string; unparsable is false.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// isLoopback reports a client that can only reach a server on this host.
func isLoopback(o *redis.Options) bool {
	if o.Network == "unix" {
		return true
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
