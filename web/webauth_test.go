package web_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// webServer is a server on a real SQLite database with user alice and
// one node, public or not.
func webServer(t *testing.T, public bool) (*httptest.Server, *core.Service, string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.SQLite(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.NewService(db)
	tok, err := svc.CreateToken(ctx, core.System, "alice", "", false)
	if err != nil {
		t.Fatal(err)
	}
	n := core.Node{Name: "a100-1"}
	for i := range 4 {
		n.GPUs = append(n.GPUs, core.GPU{Index: i, Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, UUID: "GPU-" + string(rune('a'+i))})
	}
	if _, err := svc.AddNode(ctx, core.System, n); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.NewServer(web.Config{Service: svc, Keys: db, Public: public}))
	t.Cleanup(srv.Close)
	return srv, svc, tok
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func get(t *testing.T, u string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	return do(t, req)
}

func postForm(t *testing.T, u string, form url.Values, cookie *http.Cookie, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

func TestAnonymousAccess(t *testing.T) {
	hours := "?from=" + url.QueryEscape(time.Now().UTC().Format(time.RFC3339)) + "&to=" + url.QueryEscape(time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
	t.Run("private", func(t *testing.T) {
		srv, _, _ := webServer(t, false)
		if res, _ := get(t, srv.URL+"/", nil); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin" {
			t.Errorf("GET /: %d to %q, want 303 to /signin", res.StatusCode, res.Header.Get("Location"))
		}
		if res, _ := get(t, srv.URL+"/api/v1/timeline"+hours, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("timeline without signing in: %d, want 401", res.StatusCode)
		}
	})
	t.Run("public", func(t *testing.T) {
		srv, _, _ := webServer(t, true)
		if res, body := get(t, srv.URL+"/", nil); res.StatusCode != http.StatusOK || !strings.Contains(body, "Read-only view") {
			t.Errorf("GET /: %d, want the read-only calendar", res.StatusCode)
		}
		if res, body := get(t, srv.URL+"/api/v1/timeline"+hours, nil); res.StatusCode != http.StatusOK || strings.Contains(body, `"user"`) {
			t.Errorf("anonymous timeline: %d %s, want 200 without a user", res.StatusCode, body)
		}
		for _, p := range []string{"/api/v1/users", "/api/v1/me", "/api/v1/audit"} {
			if res, _ := get(t, srv.URL+p, nil); res.StatusCode != http.StatusUnauthorized {
				t.Errorf("anonymous %s: %d, want 401", p, res.StatusCode)
			}
		}
		res, _ := postForm(t, srv.URL+"/book", url.Values{"gpus": {"1"}}, nil, map[string]string{"Accept": "application/json"})
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous booking: %d, want 401", res.StatusCode)
		}
	})
}

// signIn signs in with an API token and returns the session cookie and
// the page's CSRF token.
func signIn(t *testing.T, srv *httptest.Server, token string) (*http.Cookie, string) {
	t.Helper()
	res, _ := postForm(t, srv.URL+"/signin", url.Values{"token": {token}}, nil, nil)
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == "gpucal_session" {
			c = k
		}
	}
	if res.StatusCode != http.StatusSeeOther || c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode {
		t.Fatalf("sign-in: %d, cookie %+v; want 303 and a Secure, HttpOnly, SameSite=Lax session cookie", res.StatusCode, c)
	}
	_, page := get(t, srv.URL+"/", &http.Cookie{Name: c.Name, Value: c.Value})
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the signed-in page has no CSRF token:\n%s", page)
	}
	return &http.Cookie{Name: c.Name, Value: c.Value}, m[1]
}

func TestSessionForms(t *testing.T) {
	srv, _, tok := webServer(t, false)
	if res, body := postForm(t, srv.URL+"/signin", url.Values{"token": {"gpucal_nope"}}, nil, nil); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
		t.Errorf("a wrong token: %d, want 401 saying so", res.StatusCode)
	}
	cookie, csrf := signIn(t, srv, tok)
	start := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	form := url.Values{"gpus": {"2"}, "start": {start.Format(time.RFC3339)}, "end": {start.Add(time.Hour).Format(time.RFC3339)}, "note": {"web"}}
	jsonAccept := map[string]string{"Accept": "application/json"}

	for _, tc := range []struct {
		name   string
		header map[string]string
		csrf   string
		want   int
	}{
		{"no CSRF token", jsonAccept, "", http.StatusForbidden},
		{"a wrong CSRF token", jsonAccept, "00" + csrf[2:], http.StatusForbidden},
		{"another site", map[string]string{"Accept": "application/json", "Origin": "https://evil.example"}, csrf, http.StatusForbidden},
		{"the page's token", jsonAccept, csrf, http.StatusCreated},
		{"the same hours again", jsonAccept, csrf, http.StatusCreated}, // 2 of 4 GPUs are still free
		{"a third time", jsonAccept, csrf, http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			if tc.csrf != "" {
				f.Set("csrf", tc.csrf)
			}
			res, body := postForm(t, srv.URL+"/book", f, cookie, tc.header)
			if res.StatusCode != tc.want {
				t.Errorf("%d %s, want %d", res.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusConflict && !strings.Contains(body, `"alternatives"`) {
				t.Errorf("a conflict without alternatives: %s", body)
			}
		})
	}
	// The JSON API takes the cookie too, with the CSRF header.
	req, _ := http.NewRequest("DELETE", srv.URL+"/api/v1/reservations/r1", nil)
	req.AddCookie(cookie)
	if res, _ := do(t, req); res.StatusCode != http.StatusForbidden {
		t.Errorf("DELETE with the cookie and no CSRF header: %d, want 403", res.StatusCode)
	}
	req.Header.Set("X-CSRF-Token", csrf)
	if res, body := do(t, req); res.StatusCode != http.StatusOK || !strings.Contains(body, `"cancelled"`) {
		t.Errorf("DELETE with the CSRF header: %d %s, want 200 cancelled", res.StatusCode, body)
	}
	// Signing out ends the session.
	postForm(t, srv.URL+"/signout", url.Values{"csrf": {csrf}}, cookie, nil)
	if res, _ := get(t, srv.URL+"/api/v1/me", cookie); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("after signing out: %d, want 401", res.StatusCode)
	}
}

// TestStream reads the event stream: a booking made through the API
// arrives as a change event.
func TestStream(t *testing.T) {
	srv, _, tok := webServer(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	lines := bufio.NewScanner(res.Body)
	lines.Scan() // retry:
	start := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	c := &web.Client{BaseURL: srv.URL, Token: tok}
	if _, err := c.Book(ctx, web.BookRequest{GPUs: 1, Start: start.Format(time.RFC3339), End: start.Add(time.Hour).Format(time.RFC3339)}, ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
		if strings.HasPrefix(lines.Text(), "data: ") {
			break
		}
	}
	if want := []string{": connected", "", "id: 1", "event: change"}; len(got) < 5 || strings.Join(got[:4], "|") != strings.Join(want, "|") || !strings.Contains(got[4], `"kind":"change"`) {
		t.Errorf("stream = %q, want %q and a change", got, want)
	}
}
