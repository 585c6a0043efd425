package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The browser side: the calendar page, sign-in pages, the booking and
// cancelling forms, and the static assets. Pages are html/template; the
// timeline is the @event-calendar library driven by ui/src/app.js, which
// reads /api/v1/timeline and listens on /api/v1/stream.

// assets holds the page templates, gpucal's own script and styles, and
// the library files `make build` puts in ui/dist (only its README on a
// fresh clone: the page then says how to build them).
//
//go:embed templates ui/src ui/dist
var assets embed.FS

// libraryJS is the file whose presence means the assets are built.
const libraryJS = "ui/dist/event-calendar.min.js"

// ui is the parsed templates and the static files with their ETags.
type ui struct {
	pages  *template.Template
	static map[string]staticFile // by URL path below /static/
	built  bool
}

type staticFile struct {
	body []byte
	etag string
}

// loadUI reads the embedded assets. The templates are part of the source,
// so a parse error is a programming error.
func loadUI() *ui {
	u := &ui{pages: template.Must(template.ParseFS(assets, "templates/*.html")), static: map[string]staticFile{}}
	_ = fs.WalkDir(assets, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		u.static[strings.TrimPrefix(p, "ui/")] = staticFile{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	_, u.built = u.static[strings.TrimPrefix(libraryJS, "ui/")]
	return u
}

func (s *Server) pageRoutes() {
	s.mux.HandleFunc("GET /{$}", s.handleCalendarPage)
	s.mux.HandleFunc("GET /signin", s.handleSignInPage)
	s.mux.HandleFunc("POST /signin", s.handleSignIn)
	s.mux.HandleFunc("GET /signin/link", s.handleLinkPage)
	s.mux.HandleFunc("POST /signin/link", s.handleLinkSignIn)
	s.mux.HandleFunc("POST /signout", s.handleSignOut)
	s.mux.HandleFunc("POST /book", s.browserForm(s.handleBookForm))
	s.mux.HandleFunc("POST /reservations/{id}/cancel", s.browserForm(s.handleCancelForm))
	s.mux.HandleFunc("GET /static/{file...}", s.handleStatic)
}

// pageData is what every page template gets.
type pageData struct {
	Lang    string
	T       map[string]string
	User    string // "" when not signed in
	CSRF    string
	Public  bool
	Built   bool
	Error   string
	Message string
	Link    string // the sign-in link's token, on its confirmation page
	Config  pageConfig
}

// pageConfig is the calendar script's configuration, rendered into the
// page as JSON.
type pageConfig struct {
	Lang   string            `json:"lang"`
	T      map[string]string `json:"t"`
	User   string            `json:"user,omitempty"`
	Admin  bool              `json:"admin,omitempty"`
	CSRF   string            `json:"csrf,omitempty"`
	Public bool              `json:"public"`
}

func (s *Server) page(r *http.Request) pageData {
	lang := pickLang(r.URL.Query().Get("lang"), r.Header.Get("Accept-Language"))
	d := pageData{Lang: lang, T: messages[lang], Public: s.public, Built: s.ui.built}
	d.Config = pageConfig{Lang: lang, T: d.T, Public: s.public}
	return d
}

// render writes a page with the headers every page gets.
func (s *Server) render(w http.ResponseWriter, status int, name string, d pageData) {
	var buf bytes.Buffer
	if err := s.ui.pages.ExecuteTemplate(&buf, name, d); err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Scripts only from here; the calendar library sets inline styles.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // a sign-in link's token never leaves in a Referer to another site
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) handleCalendarPage(w http.ResponseWriter, r *http.Request) {
	a, signedIn, err := s.browserActor(r)
	if err != nil {
		if core.ErrorCode(err) == core.CodeUnauthorized {
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		s.fail(w, r, err)
		return
	}
	d := s.page(r)
	if signedIn {
		d.User, d.CSRF = a.User, csrfToken(sessionOf(r))
		d.Config.User, d.Config.Admin, d.Config.CSRF = a.User, a.Admin, d.CSRF
	}
	s.render(w, http.StatusOK, "calendar.html", d)
}

func (s *Server) handleSignInPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "signin.html", s.page(r))
}

func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) {
	s.signIn(w, r, func(ctx context.Context) (string, core.Actor, time.Time, error) {
		return s.svc.StartSession(ctx, r.PostFormValue("token"))
	})
}

// signIn starts a browser session with start (from a token or a link)
// when the form came from this site, and goes to the calendar; else it
// shows the sign-in page with the reason.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, start func(context.Context) (string, core.Actor, time.Time, error)) {
	err := checkOrigin(r)
	if err == nil {
		var sess string
		var expires time.Time
		if sess, _, expires, err = start(r.Context()); err == nil {
			s.setSession(w, sess, expires)
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
	}
	d := s.page(r)
	d.Error = core.ErrorMessage(err)
	s.render(w, status(err), "signin.html", d)
}

// handleLinkPage asks before spending a sign-in link: a chat app or a mail
// scanner that fetches the link to preview it must not use it up.
func (s *Server) handleLinkPage(w http.ResponseWriter, r *http.Request) {
	d := s.page(r)
	d.Link = r.URL.Query().Get("t")
	s.render(w, http.StatusOK, "link.html", d)
}

func (s *Server) handleLinkSignIn(w http.ResponseWriter, r *http.Request) {
	s.signIn(w, r, func(ctx context.Context) (string, core.Actor, time.Time, error) {
		return s.svc.RedeemSignInLink(ctx, r.PostFormValue("t"))
	})
}

func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r)
	if sess != "" {
		if err := checkCSRF(r, sess); err != nil {
			s.formFailed(w, r, err)
			return
		}
		if err := s.svc.EndSession(r.Context(), sess); err != nil {
			s.formFailed(w, r, err)
			return
		}
	}
	s.clearSession(w)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// browserForm runs a form handler as the signed-in browser, after the
// CSRF check. The form answers JSON to the page's script (Accept:
// application/json) and a page to a browser without it.
func (s *Server) browserForm(h func(http.ResponseWriter, *http.Request, core.Actor)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		sess := sessionOf(r)
		if sess == "" {
			s.formFailed(w, r, core.Errorf(core.CodeUnauthorized, "sign in to book or cancel"))
			return
		}
		a, err := s.svc.SessionActor(r.Context(), sess)
		if err == nil {
			err = checkCSRF(r, sess)
		}
		if err != nil {
			s.formFailed(w, r, err)
			return
		}
		h(w, r, a)
	}
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// formFailed answers a failed form: the API's error body to the script, a
// page with the message otherwise.
func (s *Server) formFailed(w http.ResponseWriter, r *http.Request, err error) {
	if wantsJSON(r) {
		s.fail(w, r, err)
		return
	}
	if status(err) >= 500 {
		s.log.Error("form failed", "path", r.URL.Path, "err", err)
	}
	d := s.page(r)
	d.Error = core.ErrorMessage(err)
	s.render(w, status(err), "message.html", d)
}

func (s *Server) handleBookForm(w http.ResponseWriter, r *http.Request, a core.Actor) {
	if err := r.ParseForm(); err != nil {
		s.formFailed(w, r, badRequest{"the form could not be read"})
		return
	}
	req, err := bookForm(r.PostForm)
	if err != nil {
		s.metrics.booking("invalid")
		s.formFailed(w, r, err)
		return
	}
	res, err := s.svc.Book(r.Context(), a, req)
	if err != nil {
		s.metrics.booking(string(core.ErrorCode(err)))
		s.formFailed(w, r, err)
		return
	}
	s.metrics.booking("ok")
	s.changed()
	out := reservationJSON(res, s.svc.Now())
	if wantsJSON(r) {
		writeJSON(w, http.StatusCreated, out)
		return
	}
	d := s.page(r)
	d.Message = d.T["booked"] + " " + out.ID
	s.render(w, http.StatusCreated, "message.html", d)
}

func (s *Server) handleCancelForm(w http.ResponseWriter, r *http.Request, a core.Actor) {
	id, err := core.ParseReservationID(r.PathValue("id"))
	if err != nil {
		s.formFailed(w, r, core.Errorf(core.CodeNotFound, "%s", core.ErrorMessage(err)))
		return
	}
	res, err := s.svc.Cancel(r.Context(), a, id)
	if err != nil {
		s.formFailed(w, r, err)
		return
	}
	s.changed()
	out := reservationJSON(res, s.svc.Now())
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, out)
		return
	}
	d := s.page(r)
	d.Message = d.T["cancelled"] + " " + out.ID
	s.render(w, http.StatusOK, "message.html", d)
}

func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := s.ui.static[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache") // revalidate: the ETag makes that a 304
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, path.Base(r.PathValue("file")), time.Time{}, bytes.NewReader(f.body))
}

// UIBuilt reports whether this binary carries the calendar's built assets
// (make build); without them the page says how to build them.
func UIBuilt() bool { return loadUI().built }
