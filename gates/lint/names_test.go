package lint

import (
	"reflect"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"token", []string{"token"}},
		{"accessToken", []string{"access", "token"}},
		{"APIKey", []string{"api", "key"}},
		{"HTTPBody", []string{"http", "body"}},
		{"lastReadSeq", []string{"last", "read", "seq"}},
		{"access_token", []string{"access", "token"}},
		{"v1Key", []string{"v1", "key"}},
		{"thread", []string{"thread"}},
		{"", nil},
	}
	for _, tc := range tests {
		if got := splitWords(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
