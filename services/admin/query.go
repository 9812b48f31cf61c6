package admin

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// decodeQuery fills dst, a pointer to a struct of string and uint64 fields, from a GET's query,
// by the fields' json names (the names the OpenAPI document gives as query parameters). As with
// bodies, an unknown or repeated parameter is refused rather than ignored.
func decodeQuery(q url.Values, dst any) error {
	v := reflect.ValueOf(dst).Elem()
	known := map[string]bool{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		known[name] = true
		vals := q[name]
		switch {
		case len(vals) == 0:
			continue
		case len(vals) > 1:
			return fmt.Errorf("%w: query parameter %q given %d times", errBadRequest, name, len(vals))
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(vals[0])
		case reflect.Uint64:
			n, err := strconv.ParseUint(vals[0], 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %s: %q is not a decimal number", errBadRequest, name, vals[0])
			}
			f.SetUint(n)
		default:
			panic("admin: query field of kind " + f.Kind().String()) // a programming error in a request type
		}
	}
	for name := range q {
		if !known[name] {
			return fmt.Errorf("%w: unknown query parameter %q", errBadRequest, name)
		}
	}
	return nil
}
