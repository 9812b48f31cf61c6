package authn

import (
	"strings"
	"testing"
)

// Every endpoint a service sends keys, identities, tokens or bodies to must be https, or http
// on this machine; a refused URL is named without its password.
func TestCheckSecureURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/moderate": true,
		"http://127.0.0.1:8080/x":            true,
		"http://[::1]:8080/x":                true,
		"http://localhost/x":                 true,
		"http://hooks.example.com/moderate":  false,
		"http://10.0.0.1/x":                  false,
		"https:///nohost":                    false,
		"ftp://127.0.0.1/x":                  false,
		"http://user:s3cret@10.0.0.1/x":      false,
	} {
		err := CheckSecureURL(raw)
		if (err == nil) != ok {
			t.Errorf("CheckSecureURL(%q) = %v, want ok %v", raw, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the refusal shows the password: %v", err)
		}
	}
}
