package luascript

import (
	"errors"
	"regexp"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Redis reports a Lua error at a line of the source it ran ("user_script:57"), which holds the
// prologue, base.lua and the prelude before the file. locatedError adds the file and its line, so
// the message points at a line a reader can open: "(at pull.lua:12)".
var userScriptLineRE = regexp.MustCompile(`user_script:(\d+)`)

// locatedError is a Redis error reply with the place it names appended. It is still a reply
// (IsReply), and its text starts as the server's did, so a caller's mapping by error class holds.
type locatedError struct {
	reply redis.Error
	at    string
}

func (e locatedError) Error() string { return e.reply.Error() + " (at " + e.at + ")" }

// RedisError marks it a reply, as go-redis's own errors are.
func (locatedError) RedisError() {}

func (e locatedError) Unwrap() error { return e.reply }

// locateErr returns err with the file and line of the first "user_script:N" it names; other
// errors, and replies without a line (the scripts' own QIM... replies), come back unchanged.
func (s *Script) locateErr(err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	m := userScriptLineRE.FindStringSubmatch(re.Error())
	if m == nil {
		return err
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return err
	}
	return locatedError{reply: re, at: s.locate(n)}
}
