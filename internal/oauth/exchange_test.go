package oauth

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenEndpoint is an RFC 8693 token endpoint that answers "x-<subject_token>-<n>"
// with expires_in, or status and body when set; it records each form it got.
type tokenEndpoint struct {
	mu        sync.Mutex
	forms     []map[string]string
	expiresIn int
	status    int
	body      string
}

func (te *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	id, secret, _ := r.BasicAuth()
	f := map[string]string{"client": id + ":" + secret}
	for k := range r.PostForm {
		f[k] = r.PostForm.Get(k)
	}
	te.mu.Lock()
	te.forms = append(te.forms, f)
	n := len(te.forms)
	te.mu.Unlock()
	if te.status != 0 {
		w.WriteHeader(te.status)
		_, _ = io.WriteString(w, te.body)
		return
	}
	fmt.Fprintf(w, `{"access_token":"x-%s-%d","issued_token_type":%q,"token_type":"Bearer","expires_in":%d}`, f["subject_token"], n, TokenTypeAccess, te.expiresIn)
}

func (te *tokenEndpoint) count() int {
	te.mu.Lock()
	defer te.mu.Unlock()
	return len(te.forms)
}

func TestExchangerAsksAndCaches(t *testing.T) {
	te := &tokenEndpoint{expiresIn: 300}
	srv := httptest.NewServer(te)
	defer srv.Close()
	ex := NewExchanger(ExchangeConfig{TokenURL: srv.URL, ClientID: "gw", ClientSecret: "s3", Audience: "https://up.example/mcp",
		Resource: "https://up.example/mcp", Scopes: []string{"read", "write"}}, nil)
	now := time.Unix(1_000_000, 0)
	ex.now = func() time.Time { return now }
	ctx := t.Context()

	got, err := ex.Token(ctx, "alice", "alice-token")
	if err != nil || got != "x-alice-token-1" {
		t.Fatalf("first exchange: %q %v", got, err)
	}
	want := map[string]string{"client": "gw:s3", "grant_type": GrantTokenExchange, "subject_token": "alice-token",
		"subject_token_type": TokenTypeAccess, "requested_token_type": TokenTypeAccess, "audience": "https://up.example/mcp",
		"resource": "https://up.example/mcp", "scope": "read write"}
	for k, v := range want {
		if te.forms[0][k] != v {
			t.Errorf("form %s = %q, want %q", k, te.forms[0][k], v)
		}
	}
	// the same subject, with a refreshed token of its own, reuses the answer
	if got, _ := ex.Token(ctx, "alice", "alice-token-2"); got != "x-alice-token-1" || te.count() != 1 {
		t.Fatalf("cached: %q after %d requests", got, te.count())
	}
	// another subject never gets alice's token
	if got, _ := ex.Token(ctx, "bob", "bob-token"); got != "x-bob-token-2" {
		t.Fatalf("bob got %q", got)
	}
	// 30 s before expiry the token is exchanged again, from the latest subject token
	now = now.Add(271 * time.Second)
	if got, _ := ex.Token(ctx, "alice", "alice-token-2"); got != "x-alice-token-2-3" {
		t.Fatalf("after expiry: %q", got)
	}
}

func TestExchangerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, subjectToken string
		status             int
		body, want         string
	}{
		{"no caller token", "", 0, "", "presented no OAuth access token"},
		{"refused", "s3cr3t", 400, `{"error":"invalid_grant","error_description":"s3cr3t is revoked"}`, "HTTP 400, invalid_grant"},
		{"hostile error code", "tok", 400, `{"error":"a\u001b]52;c;x\u0007"}`, "HTTP 400, no OAuth error code"},
		{"no access_token", "tok", 200, `{"token_type":"Bearer"}`, "no bearer access_token"},
		{"not bearer", "tok", 200, `{"access_token":"abc","token_type":"DPoP"}`, "no bearer access_token"},
		{"oversized", "tok", 200, `{"access_token":"` + strings.Repeat("a", maxExchangeBytes) + `"}`, "exceeds"},
		{"garbage", "tok", 200, `<html>`, "no bearer access_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := &tokenEndpoint{status: tc.status, body: tc.body}
			srv := httptest.NewServer(te)
			defer srv.Close()
			ex := NewExchanger(ExchangeConfig{TokenURL: srv.URL, ClientID: "gw", ClientSecret: "s"}, nil)
			_, err := ex.Token(t.Context(), "alice", tc.subjectToken)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "revoked") || strings.Contains(err.Error(), "\x1b") {
				t.Fatalf("the error carries the endpoint's text: %q", err)
			}
			// a failure is not cached: the next call asks again
			_, _ = ex.Token(t.Context(), "alice", tc.subjectToken)
			if tc.subjectToken != "" && te.count() != 2 {
				t.Fatalf("%d requests, want 2 (a failure cached?)", te.count())
			}
		})
	}
}

// TestExchangeTransport: the server gets the exchanged token in place of whatever
// Authorization the request carried, and never the caller's token.
func TestExchangeTransport(t *testing.T) {
	te := &tokenEndpoint{expiresIn: 60}
	tokSrv := httptest.NewServer(te)
	defer tokSrv.Close()
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
	}))
	defer up.Close()
	h := &SubjectToken{}
	h.Set("caller-secret")
	c := &http.Client{Transport: &ExchangeTransport{Exchanger: NewExchanger(ExchangeConfig{TokenURL: tokSrv.URL, ClientID: "gw", ClientSecret: "s"}, nil),
		Subject: "alice", Holder: h}}
	req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer configured-header")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(seen) != 1 || seen[0] != "Bearer x-caller-secret-1" {
		t.Fatalf("the server got %q", seen)
	}
	h.Set("") // a request without a caller token fails; nothing reaches the server
	c = &http.Client{Transport: &ExchangeTransport{Exchanger: NewExchanger(ExchangeConfig{TokenURL: tokSrv.URL}, nil), Subject: "bob", Holder: h}}
	if _, err := c.Post(up.URL, "application/json", strings.NewReader("{}")); err == nil || len(seen) != 1 {
		t.Fatalf("no caller token: err %v, %d requests reached the server", err, len(seen))
	}
}

// FuzzParseExchange: any answer gives a token or an error, never a panic; an error
// never carries the answer's text beyond a printable error code of 64 bytes, and a
// token is never kept past maxExchangeLife.
func FuzzParseExchange(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"a","token_type":"Bearer","expires_in":300}`))
	f.Add(400, []byte(`{"error":"invalid_grant","error_description":"x"}`))
	f.Add(200, []byte(`{"access_token":"a","expires_in":9223372036854775807}`))
	f.Add(200, []byte(`{"access_token":"a","expires_in":-5}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		now := time.Unix(1_000_000, 0)
		got, err := parseExchange(status, body, "https://idp/token", now)
		if err != nil {
			if len(err.Error()) > 160 || strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 }) {
				t.Fatalf("error %q", err)
			}
			return
		}
		if got.token == "" || got.expires.After(now.Add(maxExchangeLife)) {
			t.Fatalf("%+v", got)
		}
	})
}

// TestExchangerNoRedirect: a token endpoint's redirect is an answer, not followed: a
// 307 or 308 re-posts the form, the caller's subject_token with it, to wherever it
// points (another host, plain http).
func TestExchangerNoRedirect(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			elsewhere := &tokenEndpoint{expiresIn: 300}
			other := httptest.NewServer(elsewhere)
			defer other.Close()
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/token", status)
			}))
			defer redirect.Close()
			ex := NewExchanger(ExchangeConfig{TokenURL: redirect.URL, ClientID: "gw", ClientSecret: "s"}, nil)
			_, err := ex.Token(t.Context(), "alice", "alice-token")
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", status)) {
				t.Fatalf("err %v, want the redirect refused", err)
			}
			if elsewhere.count() != 0 {
				t.Fatalf("the redirect was followed: %v", elsewhere.forms)
			}
			// a client of the caller's own is not followed either
			ex = NewExchanger(ExchangeConfig{TokenURL: redirect.URL, ClientID: "gw", ClientSecret: "s"}, &http.Client{})
			if _, err := ex.Token(t.Context(), "alice", "alice-token"); err == nil || elsewhere.count() != 0 {
				t.Fatalf("with a given client: %v, %d requests elsewhere", err, elsewhere.count())
			}
		})
	}
}
