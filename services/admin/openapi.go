package admin

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// OpenAPI is the API's OpenAPI 3.1 document, generated from routes() and the request and
// response types' json and doc tags; docs/admin-api.json holds a copy (TestOpenAPIDocIsGenerated).
func OpenAPI() []byte {
	paths := map[string]map[string]any{}
	schemas := map[string]any{}
	for _, rt := range routes() {
		op := map[string]any{
			"summary":  rt.summary,
			"security": []map[string][]string{{"bearer": {rt.scope}}},
			"responses": map[string]any{
				"400": map[string]any{"description": "malformed request ({\"error\": …})"},
				"401": map[string]any{"description": "no valid API key"},
				"403": map[string]any{"description": "the key lacks scope " + rt.scope},
				"503": map[string]any{"description": "a store or a writer did not answer; retry"},
			},
		}
		for status, d := range extraResponses[rt.path] {
			op["responses"].(map[string]any)[status] = map[string]any{"description": d}
		}
		switch {
		case rt.req != nil && rt.method == http.MethodGet:
			op["parameters"] = queryParameters(rt.req)
		case rt.req != nil:
			op["requestBody"] = map[string]any{"required": true, "content": jsonOf(ref(rt.req, schemas))}
		}
		ok := map[string]any{"description": "done"}
		status := "200"
		if rt.resp != nil {
			ok["content"] = jsonOf(ref(rt.resp, schemas))
		} else {
			status = "204"
		}
		op["responses"].(map[string]any)[status] = ok
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Q-IM admin API", "version": contract.ProductVersion,
			"description": "Authenticated with `Authorization: Bearer <API key>`; every call is audit-logged. Generated from services/admin; do not edit."},
		"paths": paths,
		"components": map[string]any{"schemas": schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // maps of strings and slices: cannot fail
	}
	return append(b, '\n')
}

// extraResponses are the statuses only some routes answer.
var extraResponses = map[string]map[string]string{
	"/v1/dev-tokens":     {"404": "dev tokens are off (no QIM_TOKEN_SECRET)"},
	"/v1/devices":        {"404": "presence is off (no QIM_KAFKA_BROKERS)"},
	"/v1/groups":         {"404": "group routes are off (no QIM_WRITER_ADDRS)", "409": "the group would hold too many members"},
	"/v1/groups/members": {"404": "group routes are off (no QIM_WRITER_ADDRS)", "409": "the group would hold too many members"},
	"/v1/messages": {"404": "messages are off (no QIM_WRITER_ADDRS), or the sender is not a current member of the group",
		"409": "client_message_id reused with another message"},
	"/v1/rooms/moderation": roomResponses,
	"/v1/rooms":            roomResponses,
}

// roomResponses are the room routes' own statuses: the owner is never replaced by another
// RoomWriter, so its absence is a 503 until it is back.
var roomResponses = map[string]string{
	"404": "room routes are off (no QIM_ROOM_ADDRS)",
	"503": "the room's owning RoomWriter did not answer (the room is not moved to another instance); retry",
}

func jsonOf(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// ref adds v's type to schemas and returns a reference to it.
func ref(v any, schemas map[string]any) map[string]any {
	t := reflect.TypeOf(v)
	props, required := map[string]any{}, []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		props[name] = schemaOf(f.Type, f.Tag.Get("doc"), schemas)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	schemas[t.Name()] = schema
	return map[string]any{"$ref": "#/components/schemas/" + t.Name()}
}
