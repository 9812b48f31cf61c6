package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// `qimctl admin room …` turns its flags into the admin API's request: the action, the user and
// the duration, interval or rate in the API's units, the tenant; info is a GET. Flags that
// cannot be sent as given are refused before any call.
func TestAdminRoomRequests(t *testing.T) {
	type request struct {
		line string
		body map[string]any
	}
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		got = append(got, request{r.Method + " " + r.URL.RequestURI(), body})
		_, _ = w.Write([]byte(`{"room": "0000000000000000000000000000beef", "online": 3}`))
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "rooms.key")
	if err := os.WriteFile(keyFile, []byte("k3y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const room, tenant = "0000000000000000000000000000beef", "0000000000000000000000000000002a"
	run := func(args ...string) (string, error) {
		cmd := newAdminRoomCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append(args, "--url", srv.URL, "--key-file", keyFile, "--room", room))
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	post := "POST /v1/rooms/moderation"
	for _, c := range []struct {
		args []string
		want request
	}{
		{[]string{"ban", "--user", "7", "--duration", "10m"}, request{post, map[string]any{"room": room, "action": "ban", "user": 7.0, "duration_s": 600.0}}},
		{[]string{"ban", "--user", "7"}, request{post, map[string]any{"room": room, "action": "ban", "user": 7.0}}},
		{[]string{"unban", "--user", "7"}, request{post, map[string]any{"room": room, "action": "unban", "user": 7.0}}},
		{[]string{"kick", "--user", "8", "--tenant", tenant}, request{post, map[string]any{"tenant": tenant, "room": room, "action": "kick", "user": 8.0}}},
		{[]string{"mute", "--user", "7", "--duration", "90s"}, request{post, map[string]any{"room": room, "action": "mute", "user": 7.0, "duration_s": 90.0}}},
		{[]string{"unmute", "--user", "7"}, request{post, map[string]any{"room": room, "action": "unmute", "user": 7.0}}},
		{[]string{"slow-mode", "--interval", "5s"}, request{post, map[string]any{"room": room, "action": "slow_mode", "interval_ms": 5000.0}}},
		{[]string{"slow-mode", "--interval", "0"}, request{post, map[string]any{"room": room, "action": "slow_mode"}}},
		{[]string{"rate-limit", "--per-second", "20"}, request{post, map[string]any{"room": room, "action": "rate_limit", "events_per_s": 20.0}}},
		{[]string{"info", "--tenant", tenant}, request{"GET /v1/rooms?room=" + room + "&tenant=" + tenant, nil}},
	} {
		out, err := run(c.args...)
		if err != nil || !strings.Contains(out, `"online": 3`) {
			t.Fatalf("%v: %v, printed %q", c.args, err, out)
		}
		if last := got[len(got)-1]; !reflect.DeepEqual(last, c.want) {
			t.Fatalf("%v: sent %v, want %v", c.args, last, c.want)
		}
	}
	calls := len(got)
	for _, bad := range [][]string{{"ban", "--duration", "10m"}, {"ban", "--user", "7", "--duration", "1500ms"}, {"mute", "--user", "7", "--duration", "-1s"},
		{"kick", "--user", "7", "--duration", "1m"}, {"slow-mode"}, {"slow-mode", "--interval", "1.5ms"}, {"rate-limit"}, {"rate-limit", "--per-second", "-1"}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	if len(got) != calls {
		t.Fatalf("refused flags reached the API: %v", got[calls:])
	}
}
