package admin

import (
	"reflect"
	"strings"
)

// schemaOf is the JSON schema of a field's type: a struct becomes a named component (ref).
func schemaOf(t reflect.Type, doc string, schemas map[string]any) map[string]any {
	var s map[string]any
	switch t.Kind() {
	case reflect.String:
		s = map[string]any{"type": "string"}
	case reflect.Bool:
		s = map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Uint32, reflect.Int32:
		s = map[string]any{"type": "integer"}
	case reflect.Slice:
		s = map[string]any{"type": "array", "items": schemaOf(t.Elem(), "", schemas)}
	case reflect.Struct:
		s = ref(reflect.New(t).Elem().Interface(), schemas)
		if doc == "" {
			return s
		}
		return map[string]any{"allOf": []any{s}, "description": doc}
	default:
		panic("admin: OpenAPI: field of kind " + t.Kind().String())
	}
	if doc != "" {
		s["description"] = doc
	}
	return s
}

// queryParameters lists a GET request type's fields as query parameters.
func queryParameters(v any) []any {
	t := reflect.TypeOf(v)
	var out []any
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, map[string]any{"name": name, "in": "query", "required": !strings.Contains(opts, "omitempty"),
			"description": f.Tag.Get("doc"), "schema": schemaOf(f.Type, "", nil)})
	}
	return out
}
