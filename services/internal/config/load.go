package config

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Sentinel reasons carried by *Error; callers branch with errors.Is.
var (
	ErrRequired  = errors.New("is required")
	ErrMalformed = errors.New("malformed value")
	ErrZero      = errors.New("zero is not allowed here (unset the variable for its default)")
	ErrConflict  = errors.New("set together with the variable it replaces; set only one")
)

// Error names the variable that made a configuration unusable. Value is empty for secrets.
type Error struct {
	Var   string
	Value string
	Err   error
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Var, e.Err)
	}
	return fmt.Sprintf("%s=%q: %v", e.Var, e.Value, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errors are every variable that made a configuration unusable, so an operator fixes them in one
// round instead of one start-up per variable. It prints as one line; errors.As finds the first
// *Error and errors.Is each reason.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// joined is nil for none, the *Error itself for one, Errors for several.
func joined(es Errors) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return es
}

// Lookup reads one variable; os.LookupEnv in production.
type Lookup func(name string) (string, bool)

// Describe lists the variables of T, with their defaults taken from def. A declaration error
// (missing tag, unsupported type, a bool defaulting to true) is returned.
func Describe[T any](def T) ([]Var, error) {
	fields, err := walk(reflect.TypeOf(def))
	if err != nil {
		return nil, err
	}
	dv := reflect.ValueOf(def)
	out := make([]Var, 0, len(fields))
	for _, f := range fields {
		v := dv.FieldByIndex(f.index)
		if v.Kind() == reflect.Bool && v.Bool() {
			return nil, fmt.Errorf("config: %s defaults to true; name the field so that false is the default", f.Name)
		}
		if d := format(v); d != "" {
			if f.Secret || f.Required {
				return nil, fmt.Errorf("config: %s is required or secret and must not have a default", f.Name)
			}
			f.Default = d
		} else if f.Default == "" && !f.Required {
			f.Default = zeroText(v)
		}
		out = append(out, f.Var)
		if f.Secret {
			out = append(out, fileVar(f.Var))
		}
	}
	if err := checkUnique(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Load returns def with every variable that lookup finds set applied on top. Malformed values,
// and an explicit zero where def is not zero, are *Errors naming the variable (all of them:
// Errors when several). Required
// variables are not checked here but by Apply (Validate), which sees literal configs too.
func Load[T any](def T, lookup Lookup) (T, error) {
	fields, err := walk(reflect.TypeOf(def))
	if err != nil {
		return def, err
	}
	cfg := def
	cv := reflect.ValueOf(&cfg).Elem()
	dv := reflect.ValueOf(def)
	var bad Errors
	for _, f := range fields {
		raw, ok, ferr := lookupField(f, lookup)
		if ferr != nil {
			bad = append(bad, ferr)
			continue
		}
		if !ok {
			continue
		}
		shown := raw
		if f.Secret {
			shown = ""
		}
		dst := cv.FieldByIndex(f.index)
		if err := parseInto(dst, raw); err != nil {
			bad = append(bad, &Error{Var: f.Name, Value: shown, Err: fmt.Errorf("%w: %v", ErrMalformed, err)})
		} else if dst.IsZero() && !dv.FieldByIndex(f.index).IsZero() {
			bad = append(bad, &Error{Var: f.Name, Value: shown, Err: ErrZero})
		}
	}
	if err := joined(bad); err != nil {
		return def, err
	}
	return cfg, nil
}

// Apply fills every zero field of *cfg from def and then reports every required field that is
// still empty (Errors when several). Services call it at the top of Validate, so a Config built as a literal
// (tests, embedding) gets the same defaults as one loaded from the environment.
func Apply[T any](cfg *T, def T) error {
	fields, err := walk(reflect.TypeOf(def))
	if err != nil {
		return err
	}
	cv := reflect.ValueOf(cfg).Elem()
	dv := reflect.ValueOf(def)
	var missing Errors
	for _, f := range fields {
		dst := cv.FieldByIndex(f.index)
		if dst.IsZero() {
			dst.Set(dv.FieldByIndex(f.index))
		}
		if f.Required && dst.IsZero() {
			missing = append(missing, &Error{Var: f.Name, Err: ErrRequired})
		}
	}
	return joined(missing)
}

// parseInto parses raw into dst according to dst's type.
func parseInto(dst reflect.Value, raw string) error {
	if dst.Kind() == reflect.Pointer {
		elem := reflect.New(dst.Type().Elem())
		if err := parseInto(elem.Elem(), raw); err != nil {
			return err
		}
		dst.Set(elem)
		return nil
	}
	if u, ok := dst.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(raw))
	}
	raw = strings.TrimSpace(raw)
	switch {
	case dst.Type() == durationType:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("want a Go duration such as 250ms, 5s or 1m: %v", err)
		}
		dst.SetInt(int64(d))
	case dst.Kind() == reflect.String:
		dst.SetString(raw)
	case dst.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("want true or false")
		}
		dst.SetBool(b)
	case dst.CanInt():
		n, err := strconv.ParseInt(raw, 10, dst.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a whole number that fits %d bits", dst.Type().Bits())
		}
		dst.SetInt(n)
	case dst.CanUint():
		n, err := strconv.ParseUint(raw, 10, dst.Type().Bits())
		if err != nil {
			return fmt.Errorf("want a non-negative whole number that fits %d bits", dst.Type().Bits())
		}
		dst.SetUint(n)
	case dst.CanFloat():
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errors.New("want a number")
		}
		dst.SetFloat(x)
	case dst.Kind() == reflect.Slice:
		return parseList(dst, raw)
	default:
		return fmt.Errorf("unsupported type %v", dst.Type())
	}
	return nil
}

// parseList splits a comma-separated list; an empty element ("a,,b", a trailing comma) is a
// typo, not a value.
func parseList(dst reflect.Value, raw string) error {
	if raw == "" {
		dst.Set(reflect.Zero(dst.Type()))
		return nil
	}
	parts := strings.Split(raw, ",")
	out := reflect.MakeSlice(dst.Type(), 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return errors.New("empty element in comma-separated list")
		}
		out = reflect.Append(out, reflect.ValueOf(p).Convert(dst.Type().Elem()))
	}
	dst.Set(out)
	return nil
}

// zeroText is how the zero default of a non-pointer scalar reads in help ("0", "false", "0s");
// strings, lists and pointers have no default to show ("" renders as unset).
func zeroText(v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		return "0s"
	case v.Kind() == reflect.Bool:
		return "false"
	case v.CanInt() || v.CanUint() || v.CanFloat():
		return "0"
	}
	return ""
}

// FromEnv is Load from the process environment with the error wrapped in class (a service's
// ErrConfig), which is what every service's FromEnv does.
func FromEnv[T any](def T, class error) (T, error) {
	c, err := Load(def, os.LookupEnv)
	if err != nil {
		return c, fmt.Errorf("%w: %w", class, err)
	}
	return c, nil
}

// Prepare is Apply with the error wrapped in class: the first line of every service's Validate.
func Prepare[T any](cfg *T, def T, class error) error {
	if err := Apply(cfg, def); err != nil {
		return fmt.Errorf("%w: %w", class, err)
	}
	return nil
}
