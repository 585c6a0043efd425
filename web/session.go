package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/gpucal/gpucal/core"
)

// Browsers sign in once (a one-time link from the bot, or an API token) and
// then carry a session in an HTTP-only cookie. Requests that change
// something with that cookie must also carry the session's CSRF token (the
// X-CSRF-Token header, or a form's "csrf" field), which only pages the
// server rendered for that session know; and when the browser says where
// the request comes from (Origin), it must be this server.

// sessionCookie names the cookie that holds a browser session.
const sessionCookie = "gpucal_session"

// csrfHeader carries the CSRF token of fetch requests.
const csrfHeader = "X-CSRF-Token"

// publicRoutes are the API routes that anyone may read without signing in
// when the site allows it (Config.Public): what the calendar shows.
var publicRoutes = map[string]bool{
	"GET /api/v1/calendar": true,
	"GET /api/v1/timeline": true,
	"GET /api/v1/stream":   true,
	"GET /api/v1/nodes":    true,
	"GET /api/v1/queue":    true,
}

// csrfToken derives a session's CSRF token. It is a MAC of the session
// under a fixed label: whoever can compute it already holds the session.
func csrfToken(session string) string {
	m := hmac.New(sha256.New, []byte(session))
	m.Write([]byte("gpucal csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies the CSRF token and the origin of a request that
// changes something on the strength of a session cookie.
func checkCSRF(r *http.Request, session string) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	if !hmac.Equal([]byte(got), []byte(csrfToken(session))) {
		return core.Errorf(core.CodeForbidden, "the form is stale or came from another site (CSRF check failed); reload the page and try again")
	}
	return nil
}

// checkOrigin refuses a request whose browser says it comes from another
// site. Browsers send Origin with every POST; tools usually send none.
func checkOrigin(r *http.Request) error {
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || u.Host != r.Host {
		return core.Errorf(core.CodeForbidden, "this request came from another site (%s)", o)
	}
	return nil
}

// sessionOf returns the browser's session token, "" when it has none.
func sessionOf(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// setSession gives the browser its session cookie.
func (s *Server) setSession(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, Secure: !s.insecureCookies, SameSite: http.SameSiteLaxMode})
}

// clearSession removes the session cookie.
func (s *Server) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: !s.insecureCookies, SameSite: http.SameSiteLaxMode})
}

// browserActor resolves a request without an Authorization header: its
// session, or the anonymous reader where the site is public. signedIn
// says which.
func (s *Server) browserActor(r *http.Request) (a core.Actor, signedIn bool, err error) {
	if sess := sessionOf(r); sess != "" {
		a, err = s.svc.SessionActor(r.Context(), sess)
		if err == nil {
			return a, true, nil
		}
		if core.ErrorCode(err) != core.CodeUnauthorized || !s.public {
			return core.Actor{}, false, err
		}
		// A stale cookie on a public site: read as anyone may.
	}
	if !s.public {
		return core.Actor{}, false, core.Errorf(core.CodeUnauthorized, "an API token is required (Authorization: Bearer …), or sign in at /signin")
	}
	return core.Actor{}, false, nil
}
