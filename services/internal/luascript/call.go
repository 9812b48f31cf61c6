package luascript

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Call assembles one invocation from a: KEYS and ARGV in header order, a tail's groups after the
// fixed names. The slices of one tail group must have equal lengths; unequal ones are a
// programming error of the caller and panic, like an index out of range.
func (b *Binding[A, R]) Call(a *A) Call {
	v := reflect.ValueOf(a).Elem()
	keys := assemble(b.sc.name, v, b.keys, func(f reflect.Value, _ valueKind) string { return f.String() })
	args := assemble(b.sc.name, v, b.args, argValue)
	return Call{script: b.sc, keys: keys, args: args}
}

func argValue(f reflect.Value, k valueKind) any {
	switch k {
	case vBytes:
		return f.Bytes()
	case vInt:
		return f.Int()
	case vUint:
		return f.Uint()
	}
	return f.String()
}

func assemble[T any](script string, v reflect.Value, bs []binder, conv func(reflect.Value, valueKind) T) []T {
	fixed, groups := 0, -1
	for _, bd := range bs {
		if !bd.tail {
			fixed++
			continue
		}
		n := v.FieldByIndex(bd.index).Len()
		if groups >= 0 && n != groups {
			panic(fmt.Sprintf("luascript: %s: tail %q has %d items, its group's first name %d", script, bd.name, n, groups))
		}
		groups = n
	}
	out := make([]T, 0, fixed+max(groups, 0)*(len(bs)-fixed))
	for _, bd := range bs[:fixed] {
		out = append(out, conv(v.FieldByIndex(bd.index), bd.kind))
	}
	for i := 0; i < groups; i++ {
		for _, bd := range bs[fixed:] {
			out = append(out, conv(v.FieldByIndex(bd.index).Index(i), bd.kind))
		}
	}
	return out
}

// Decode turns the reply of a call of this binding into R. An error reply (or redis.Nil) is
// returned for the caller's mapping of its class, its text unchanged but for the file and line
// of a Lua error appended (locate.go); a reply of another shape than the header's is
// ErrReplyShape.
func (b *Binding[A, R]) Decode(cmd *redis.Cmd) (R, error) {
	var r R
	if err := cmd.Err(); err != nil {
		return r, b.sc.locateErr(err)
	}
	rv := reflect.ValueOf(&r).Elem()
	if b.sc.iface.Value {
		return r, b.set(rv.FieldByIndex(b.reply[0].index), b.reply[0], cmd.Val())
	}
	vals, ok := cmd.Val().([]any)
	nf := len(b.sc.iface.Reply.Fixed)
	if !ok || len(vals) < nf || (!b.sc.iface.Reply.Variadic() && len(vals) != nf) {
		return r, fmt.Errorf("%w: %s answered %T of %d, want %d positions", ErrReplyShape, b.sc.name, cmd.Val(), len(vals), nf)
	}
	for i, bd := range b.reply[:nf] {
		if err := b.set(rv.FieldByIndex(bd.index), bd, vals[i]); err != nil {
			return r, err
		}
	}
	if b.sc.iface.Reply.Variadic() {
		bd := b.reply[nf]
		f := rv.FieldByIndex(bd.index)
		f.Set(reflect.MakeSlice(f.Type(), len(vals)-nf, len(vals)-nf))
		for i, x := range vals[nf:] {
			if err := b.set(f.Index(i), bd, x); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

func (b *Binding[A, R]) set(f reflect.Value, bd binder, x any) error {
	switch v := x.(type) {
	case string:
		switch bd.kind {
		case vString:
			f.SetString(v)
			return nil
		case vBytes:
			f.SetBytes([]byte(v))
			return nil
		}
	case int64:
		if bd.kind == vInt {
			f.SetInt(v)
			return nil
		}
	}
	return fmt.Errorf("%w: %s reply %s is %T", ErrReplyShape, b.sc.name, bd.name, x)
}

// Do runs one call on its own (EVALSHA, then EVAL if the server lost the script) and decodes
// the reply: for a caller that sends one script at a time and holds only a redis.Scripter.
func (b *Binding[A, R]) Do(ctx context.Context, rdb redis.Scripter, a *A) (R, error) {
	c := b.Call(a)
	if src, ok := faultSource(ctx, b.sc); ok { // never in a normal build (fault_off.go)
		return b.Decode(rdb.Eval(ctx, src, c.keys, c.args...))
	}
	return b.Decode(b.sc.s.Run(ctx, rdb, c.keys, c.args...))
}

// WithArg returns a copy of c whose argument name is v, bypassing the Go type: for tests that
// show a script's own validation refusing what a typed call cannot express. A name that is not a
// fixed argument of the header panics.
func (c Call) WithArg(name string, v any) Call {
	i := c.argIndex(name)
	c.args = slices.Clone(c.args)
	c.args[i] = v
	return c
}

// WithoutArg returns a copy of c without the argument name (the later ones move up): for tests
// of a script's arity check.
func (c Call) WithoutArg(name string) Call {
	i := c.argIndex(name)
	c.args = slices.Delete(slices.Clone(c.args), i, i+1)
	return c
}

func (c Call) argIndex(name string) int {
	i := slices.Index(c.script.iface.Argv.Fixed, name)
	if i < 0 || i >= len(c.args) {
		panic(fmt.Sprintf("luascript: %s: %q is not a fixed argument of the call", c.script.name, name))
	}
	return i
}
