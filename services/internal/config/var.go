package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Var describes one environment variable of a configuration struct.
type Var struct {
	Name     string // QIM_…
	Type     string // "string", "bool", "int", "duration", "list", "float", "secret", …
	Default  string // "" when there is none
	Unit     string
	Doc      string
	Required bool
	Secret   bool
}

// field is one leaf of a configuration struct, found by walk.
type field struct {
	Var
	index []int // reflect index path from the root struct
}

var (
	durationType        = reflect.TypeOf(time.Duration(0))
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// walk lists the leaf fields of the struct type t (a declaration error is returned, not
// panicked, so a bad tag fails the service's tests with a message).
func walk(t reflect.Type) ([]field, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: %v is not a struct", t)
	}
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		name, ok := sf.Tag.Lookup("env")
		if !ok {
			if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
				sub, err := walk(sf.Type)
				if err != nil {
					return nil, err
				}
				for _, f := range sub {
					f.index = append([]int{i}, f.index...)
					out = append(out, f)
				}
				continue
			}
			return nil, fmt.Errorf("config: field %s.%s has no env tag", t.Name(), sf.Name)
		}
		kind, err := typeName(sf.Type)
		if err != nil {
			return nil, fmt.Errorf("config: %s (%s.%s): %w", name, t.Name(), sf.Name, err)
		}
		v := Var{Name: name, Type: kind, Unit: sf.Tag.Get("unit"), Doc: sf.Tag.Get("doc"),
			Required: sf.Tag.Get("required") == "true", Secret: sf.Tag.Get("secret") == "true", Default: sf.Tag.Get("default")}
		if v.Secret {
			v.Type = "secret"
		}
		if !strings.HasPrefix(name, "QIM_") || v.Doc == "" {
			return nil, fmt.Errorf("config: %s.%s: env name must start with QIM_ and doc must be set", t.Name(), sf.Name)
		}
		out = append(out, field{Var: v, index: []int{i}})
	}
	seen := map[string]bool{}
	for _, f := range out {
		if seen[f.Name] {
			return nil, fmt.Errorf("config: %s is declared twice in %s", f.Name, t.Name())
		}
		seen[f.Name] = true
	}
	return out, nil
}

func typeName(t reflect.Type) (string, error) {
	switch {
	case t == durationType:
		return "duration", nil
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "string", nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int", nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "uint", nil
	case reflect.Float64:
		return "float", nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "list", nil
		}
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return "", fmt.Errorf("unsupported type %v", t)
}

// format renders a field value the way a user would write it in the environment ("" for zero).
func format(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		return time.Duration(v.Int()).String()
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		return strings.Join(v.Interface().([]string), ",")
	case v.Kind() == reflect.String:
		return v.String()
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10)
	case v.CanFloat():
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}
