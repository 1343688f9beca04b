package main

import (
	"strings"
	"testing"
)

func TestHTTPFlagsCheck(t *testing.T) {
	for _, tc := range []struct {
		h    httpFlags
		want string
	}{
		{httpFlags{}, ""},
		{httpFlags{listen: "127.0.0.1:0"}, ""},
		{httpFlags{listen: "127.0.0.1:0", warmPool: 16}, ""},
		{httpFlags{listen: "127.0.0.1:0", warmPool: 17}, "--warm-pool 17: want 0 (off) to 16"},
		{httpFlags{listen: "127.0.0.1:0", warmPool: -1}, "--warm-pool -1"},
		{func() httpFlags { h := httpFlags{listen: "127.0.0.1:0"}; h.oauth.Issuer = "https://i"; return h }(), ""},
		{func() httpFlags { h := httpFlags{}; h.oauth.Issuer = "https://i"; return h }(), "--oauth-issuer needs --listen"},
		{func() httpFlags { h := httpFlags{}; h.tls.Cert = "c"; return h }(), "--tls-cert needs --listen"},
	} {
		err := tc.h.check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.h, err, tc.want)
		}
	}
}
