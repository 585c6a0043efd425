package web

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// KeyStore keeps the outcomes of requests sent with an Idempotency-Key.
// store.DB implements it.
type KeyStore interface {
	ClaimKey(ctx context.Context, rec core.IdempotencyRecord, staleBefore time.Time) (existing core.IdempotencyRecord, claimed bool, err error)
	CompleteKey(ctx context.Context, user, key string, status int, body []byte) error
	ReleaseKey(ctx context.Context, user, key string) error
}

// Config is what a Server needs.
type Config struct {
	Service *core.Service
	Keys    KeyStore
	Ready   func(ctx context.Context) error // readiness: the database answers
	Logger  *slog.Logger
	Metrics *Metrics // nil: a fresh registry
	// OnChange, when set, is called after every change the plan depends
	// on (a submission, a cancellation, a booking, a new node), so that the
	// server can replan at once. It must not block.
	OnChange func()
	// Leader, when set, says whether this replica leads and who does
	// ("" when unknown); /readyz shows it.
	Leader func() (leading bool, leader string)
	// Events carries changes to the browsers (server-sent events); nil: a
	// fresh Broker. Every change a handler makes is published on it; the
	// caller publishes the rest (the replan loop's).
	Events *Broker
	// Public lets anyone who can reach the server read the calendar
	// without signing in; booking and cancelling still need a sign-in.
	Public bool
	// InsecureCookies leaves the Secure flag off the session cookie, for a
	// site served over plain HTTP on something other than localhost.
	InsecureCookies bool
}

// Server serves the HTTP API.
type Server struct {
	svc      *core.Service
	keys     KeyStore
	ready    func(ctx context.Context) error
	log      *slog.Logger
	metrics  *Metrics
	onChange func()
	leader   func() (bool, string)
	mux      *http.ServeMux
	events   *Broker
	public   bool
	// insecureCookies: see Config.InsecureCookies.
	insecureCookies bool
	ui              *ui
}

// NewServer returns a Server with every route registered.
func NewServer(cfg Config) *Server {
	s := &Server{svc: cfg.Service, keys: cfg.Keys, ready: cfg.Ready, log: cfg.Logger, metrics: cfg.Metrics,
		onChange: cfg.OnChange, leader: cfg.Leader, mux: http.NewServeMux(), events: cfg.Events, public: cfg.Public,
		insecureCookies: cfg.InsecureCookies, ui: loadUI()}
	if s.events == nil {
		s.events = NewBroker()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.svc != nil {
		s.metrics.watchInventory(s.svc)
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.handleReady)
	s.mux.Handle("GET /metrics", s.metrics.Handler())

	api := func(pattern string, h func(http.ResponseWriter, *http.Request, core.Actor)) {
		s.mux.Handle(pattern, s.authenticated(pattern, h))
	}
	api("GET /api/v1/me", s.handleMe)
	api("GET /api/v1/nodes", s.handleNodes)
	api("POST /api/v1/nodes", s.handleAddNode)
	api("POST /api/v1/reservations", s.handleBook)
	api("GET /api/v1/reservations", s.handleReservations)
	api("GET /api/v1/reservations/{id}", s.handleReservation)
	api("DELETE /api/v1/reservations/{id}", s.handleCancel)
	api("POST /api/v1/reservations/{id}/cancel", s.handleCancel)
	api("POST /api/v1/reservations/{id}/extend", s.handleExtend)
	api("POST /api/v1/reservations/{id}/release", s.handleRelease)
	api("GET /api/v1/calendar", s.handleCalendar)
	api("GET /api/v1/report", s.handleReport)
	api("POST /api/v1/jobs", s.handleSubmit)
	api("GET /api/v1/jobs", s.handleJobs)
	api("GET /api/v1/jobs/{id}", s.handleJob)
	api("DELETE /api/v1/jobs/{id}", s.handleCancelJob)
	api("POST /api/v1/jobs/{id}/cancel", s.handleCancelJob)
	api(progressRoute, s.handleProgress)
	api("GET /api/v1/queue", s.handleQueue)
	api("POST /api/v1/whatif", s.handleWhatIf)
	api("GET /api/v1/users", s.handleUsers)
	api("POST /api/v1/users", s.handleAddUser)
	api("GET /api/v1/users/{name}/chat-links", s.handleChatLinks)
	api("GET /api/v1/users/{name}/notify-prefs", s.handleNotifyPrefs)
	api("PUT /api/v1/users/{name}/notify-prefs", s.handleSetNotifyPrefs)
	api("POST /api/v1/users/{name}/chat-links", s.handleLinkChat)
	api("GET /api/v1/projects", s.handleProjects)
	api("POST /api/v1/projects", s.handleAddProject)
	api("POST /api/v1/projects/{name}/members", s.handleSetMember)
	api("POST /api/v1/tokens", s.handleCreateToken)
	api("GET /api/v1/audit", s.handleAudit)
	api("POST /api/v1/nodes/join-tokens", s.handleCreateJoinToken)
	api("POST /api/v1/nodes/{name}/gpus/{index}/clear-fault", s.handleClearFault)
	api("GET /api/v1/jobs/{id}/log", s.handleLog)
	api("GET /api/v1/timeline", s.handleTimeline)
	api("GET /api/v1/stream", s.handleStream)
	s.agentRoutes()
	s.pageRoutes()
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, core.Errorf(core.CodeNotFound, "no API route %s %s; see docs/api.md", r.Method, r.URL.Path))
	})
}

// ServeHTTP logs and measures every request and turns panics into 500s.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, core.Errorf(core.CodeInternal, "internal error"))
			}
		}
		_, pattern := s.mux.Handler(r)
		s.metrics.observeHTTP(pattern, rec.status, time.Since(start))
		level := slog.LevelDebug
		if rec.status >= 500 && r.Context().Err() == nil { // not a client that went away
			level = slog.LevelError
		}
		s.log.Log(r.Context(), level, "http", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start))
	}()
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			s.log.Warn("not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "database unavailable"})
			return
		}
	}
	out := map[string]any{"status": "ready"}
	if s.leader != nil {
		// A replica that does not lead is ready all the same: it serves
		// the API, the agents and chat.
		leading, leader := s.leader()
		out["leader"] = leading
		out["leader_name"] = leader
	}
	writeJSON(w, http.StatusOK, out)
}

type actorKey struct{}

// authenticated resolves the caller, then applies the Idempotency-Key
// protocol to POSTs that carry one. Callers are a bearer token (API
// clients, agents' jobs), else a browser session (session.go), else, on a
// public site and for publicRoutes only, the anonymous reader.
func (s *Server) authenticated(pattern string, h func(http.ResponseWriter, *http.Request, core.Actor)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			a, signedIn, err := s.browserActor(r)
			switch {
			case err != nil:
			case signedIn && r.Method != http.MethodGet && r.Method != http.MethodHead:
				err = checkCSRF(r, sessionOf(r))
			case !signedIn && !publicRoutes[pattern]:
				err = core.Errorf(core.CodeUnauthorized, "an API token is required (Authorization: Bearer …), or sign in at /signin")
			}
			if err != nil {
				writeError(w, err)
				return
			}
			s.serveAs(w, r, a, h)
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, core.Errorf(core.CodeUnauthorized, "use 'Authorization: Bearer <token>'"))
			return
		}
		token = strings.TrimSpace(token)
		var a core.Actor
		var err error
		if core.IsJobToken(token) {
			a, err = s.jobActor(r, pattern, token)
		} else {
			a, err = s.svc.Authenticate(r.Context(), token)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		s.serveAs(w, r, a, h)
	})
}

// serveAs runs h as a, through the Idempotency-Key protocol when asked.
func (s *Server) serveAs(w http.ResponseWriter, r *http.Request, a core.Actor, h func(http.ResponseWriter, *http.Request, core.Actor)) {
	if r.Method == http.MethodPost && r.Header.Get("Idempotency-Key") != "" && a.User != "" {
		s.idempotent(w, r, a, h)
		return
	}
	h(w, r, a)
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (the event
// stream flushes and lifts the write deadline through it).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// progressRoute is the one route a job token may call.
const progressRoute = "POST /api/v1/jobs/{id}/progress"

// jobActor resolves a job token (GPUCAL_JOB_TOKEN): it may report its own
// job's progress, as the job's owner, and nothing else.
func (s *Server) jobActor(r *http.Request, pattern, token string) (core.Actor, error) {
	if pattern != progressRoute {
		return core.Actor{}, core.Errorf(core.CodeForbidden, "a job token may only report its job's progress")
	}
	id, a, err := s.svc.AuthenticateJob(r.Context(), token)
	if err != nil {
		return core.Actor{}, err
	}
	if want, err := core.ParseJobID(r.PathValue("id")); err != nil || want != id {
		return core.Actor{}, core.Errorf(core.CodeForbidden, "this job token belongs to %s", core.JobName(id))
	}
	return a, nil
}
