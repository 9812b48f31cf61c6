package luascript

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
)

// Binding is a script with the Go types of its call (A) and its reply (R), checked against the
// script's header when the binding is made.
//
// A is a struct whose fields are tagged key:"name" or arg:"name", one field per name of the
// header's keys and argv lines; R a struct with one reply:"name" field per name of its reply or
// value line (embedded structs count with their fields). A tail name takes a slice; the fields of
// one tail group are parallel slices of equal length. Field types: keys string ([]string for a
// tail); arguments string, []byte, int, int64 or uint64 (a slice of string or []byte for a
// tail); reply fields string, []byte or int64 (a slice of string or int64 for a tail).
//
// Invariants: every position of a call and of a reply is derived from the header, so Go never
// writes one by hand; a type that does not cover the header exactly — a name missing, an extra or
// untagged field, a tail that is not a slice or a slice that is not a tail — panics at MustBind,
// which runs at package initialisation, so every test of the package catches it.
//
// Rejected: keeping the positional []string/[]any calls and r[0], r[1] decoding with the layout in
// comments (a reordered argument passed every compile and surfaced as a misbehaving script), and a
// Go-only wrapper type per script whose positions are still hand-written (it moves the comment
// into code without anything comparing it with the Lua side).
type Binding[A, R any] struct {
	sc    *Script
	keys  []binder // fixed then tail, in header order
	args  []binder
	reply []binder
}

// binder is one header name bound to a struct field.
type binder struct {
	name  string
	index []int // reflect field index path
	kind  valueKind
	tail  bool
}

type valueKind uint8

const (
	vString valueKind = iota
	vBytes
	vInt
	vUint
)

// ErrReplyShape: a script reply did not have the shape its header declares. Stores map it to
// their own corruption error.
var ErrReplyShape = errors.New("luascript: script reply does not match its header")

// MustBind loads lua/<name> (see MustLoad) and binds it to A and R; a mismatch panics.
func MustBind[A, R any](fsys fs.FS, prelude, name string) *Binding[A, R] {
	return Bind[A, R](MustLoad(fsys, prelude, name))
}

// Bind binds a loaded script to A and R; a mismatch with its header panics (a build defect).
func Bind[A, R any](sc *Script) *Binding[A, R] {
	b, err := bind[A, R](sc)
	if err != nil {
		panic(err.Error())
	}
	return b
}

func bind[A, R any](sc *Script) (*Binding[A, R], error) {
	b := &Binding[A, R]{sc: sc}
	fields, err := tagged(reflect.TypeFor[A](), "key", "arg")
	if err != nil {
		return nil, fmt.Errorf("luascript: %s: call type: %w", sc.name, err)
	}
	if b.keys, err = bindSection(sc.iface.Keys, fields["key"], "key", keyKinds); err != nil {
		return nil, fmt.Errorf("luascript: %s: call type: %w", sc.name, err)
	}
	if b.args, err = bindSection(sc.iface.Argv, fields["arg"], "arg", argKinds); err != nil {
		return nil, fmt.Errorf("luascript: %s: call type: %w", sc.name, err)
	}
	rf, err := tagged(reflect.TypeFor[R](), "reply")
	if err == nil {
		b.reply, err = bindSection(sc.iface.Reply, rf["reply"], "reply", replyKinds)
	}
	if err != nil {
		return nil, fmt.Errorf("luascript: %s: reply type: %w", sc.name, err)
	}
	return b, nil
}

// Field kinds each side accepts; a tail takes a slice of one of the element kinds.
var (
	keyKinds   = kinds{one: []valueKind{vString}, tail: []valueKind{vString}}
	argKinds   = kinds{one: []valueKind{vString, vBytes, vInt, vUint}, tail: []valueKind{vString, vBytes}}
	replyKinds = kinds{one: []valueKind{vString, vBytes, vInt}, tail: []valueKind{vString, vInt}}
)

type kinds struct{ one, tail []valueKind }

type field struct {
	name   string
	index  []int
	typ    reflect.Type
	goName string
}

// tagged lists the struct fields of t by tag (each field carries exactly one of tags).
func tagged(t reflect.Type, tags ...string) (map[string][]field, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct", t)
	}
	out := map[string][]field{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue // its fields are listed on their own
		}
		var found []string
		for _, tag := range tags {
			if v, ok := f.Tag.Lookup(tag); ok {
				found = append(found, tag)
				out[tag] = append(out[tag], field{name: v, index: f.Index, typ: f.Type, goName: f.Name})
			}
		}
		switch {
		case len(found) != 1:
			return nil, fmt.Errorf("field %s needs exactly one of the tags %v", f.Name, tags)
		case !f.IsExported():
			return nil, fmt.Errorf("field %s is not exported", f.Name)
		}
	}
	return out, nil
}

// bindSection matches the fields of one tag with the names of one header section.
func bindSection(s Section, fields []field, tag string, k kinds) ([]binder, error) {
	byName := map[string]field{}
	for _, f := range fields {
		if _, dup := byName[f.name]; dup {
			return nil, fmt.Errorf("two fields tagged %s:%q", tag, f.name)
		}
		if !s.has(f.name) {
			return nil, fmt.Errorf("field %s: %s:%q is not in the header (%v)", f.goName, tag, f.name, s.names())
		}
		byName[f.name] = f
	}
	var out []binder
	for _, n := range s.names() {
		f, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no field tagged %s:%q", tag, n)
		}
		tail := slices.Contains(s.Tail, n)
		typ, allowed := f.typ, k.one
		if tail {
			if typ.Kind() != reflect.Slice || typ.Elem().Kind() == reflect.Uint8 {
				return nil, fmt.Errorf("field %s: %q is a tail, want a slice, have %s", f.goName, n, typ)
			}
			typ, allowed = typ.Elem(), k.tail
		}
		vk, ok := kindOf(typ)
		if !ok || !slices.Contains(allowed, vk) {
			return nil, fmt.Errorf("field %s: type %s not accepted for %s %q", f.goName, f.typ, tag, n)
		}
		out = append(out, binder{name: n, index: f.index, kind: vk, tail: tail})
	}
	return out, nil
}

func kindOf(t reflect.Type) (valueKind, bool) {
	switch {
	case t.Kind() == reflect.String:
		return vString, true
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return vBytes, true
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return vInt, true
	case t.Kind() == reflect.Uint64:
		return vUint, true
	}
	return 0, false
}

// Script is the bound script, for Preload.
func (b *Binding[A, R]) Script() *Script { return b.sc }
