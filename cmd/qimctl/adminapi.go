package main

// qimctl admin kick|devices|message|group|room: the admin API's routes from the command line. Each
// prints the API's JSON answer; the call is audited by the API under the key's id.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// adminAPI is where and as whom the commands call.
type adminAPI struct {
	url, keyFile, tenant string
	timeout              time.Duration
}

func (a *adminAPI) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.url, "url", "", "the admin API's base URL, http://host:port (required)")
	f.StringVar(&a.keyFile, "key-file", "", "file holding the admin API key (required; qimctl admin key makes one)")
	f.StringVar(&a.tenant, "tenant", "", "tenant as 32 hex digits (default: tenant 0)")
	f.DurationVar(&a.timeout, "timeout", 10*time.Second, "longest wait for the answer")
	_ = cmd.MarkFlagRequired("url")
	_ = cmd.MarkFlagRequired("key-file")
}

// call sends body (nil: none) and prints the JSON answer to out. A status other than 200 or
// 204 is an error carrying the API's own message.
func (a *adminAPI) call(ctx context.Context, method, path string, body any, out io.Writer) error {
	key, err := os.ReadFile(a.keyFile)
	if err != nil {
		return fmt.Errorf("qimctl admin: --key-file: %w", err)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("qimctl admin: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.url, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("qimctl admin: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimRight(string(key), "\r\n"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("qimctl admin: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		var e struct{ Error string }
		_ = json.Unmarshal(b, &e)
		return fmt.Errorf("qimctl admin: %s %s: %s: %s", method, path, resp.Status, e.Error)
	}
	if len(b) == 0 {
		return nil
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, b, "", "  ") != nil {
		_, err = out.Write(b)
		return err
	}
	_, err = fmt.Fprintln(out, pretty.String())
	return err
}

// query is a GET's query string with the tenant when one is set.
func (a *adminAPI) query(kv ...string) string {
	q := url.Values{}
	if a.tenant != "" {
		q.Set("tenant", a.tenant)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return "?" + q.Encode()
}
