package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/scheduler"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/web"
)

// serverConfig is everything `gpucal server` is configured with.
type serverConfig struct {
	addr           string
	db             string
	data           string
	logLevel       string
	logFormat      string
	bootstrapToken string
	replanEvery    string
	leaderLease    time.Duration
	nodes          core.NodePolicy
	alerts         core.AlertPolicy
	chat           chatConfig
	web            webConfig
}

// webConfig is the web calendar's part of the server's configuration.
type webConfig struct {
	public          bool // anyone may read the calendar without signing in
	insecureCookies bool // no Secure flag on the session cookie (plain HTTP off localhost)
}

// fromEnv fills in what the environment gives and the flags did not:
// values that may hold secrets are not flag defaults, because flag prints
// defaults in its help and usage errors.
func (c *serverConfig) fromEnv(e *env) {
	if c.db == "" {
		c.db = e.getenv("GPUCAL_DB")
	}
	c.chat.secretsFromEnv(e)
}

func (c *serverConfig) flags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&c.addr, "addr", envOr(e, "GPUCAL_ADDR", "127.0.0.1:8080"), "listen address (GPUCAL_ADDR)")
	fs.StringVar(&c.db, "db", "", "database: sqlite:PATH or postgres://… (better: GPUCAL_DB, which keeps a password out of process listings; default sqlite:DATA/gpucal.db)")
	fs.StringVar(&c.data, "data", envOr(e, "GPUCAL_DATA", defaultDataDir()), "data folder for the embedded SQLite database (GPUCAL_DATA)")
	fs.StringVar(&c.logLevel, "log-level", envOr(e, "GPUCAL_LOG_LEVEL", "info"), "log level: debug, info, warn, error (GPUCAL_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", envOr(e, "GPUCAL_LOG_FORMAT", "text"), "log format: text or json (GPUCAL_LOG_FORMAT)")
	fs.DurationVar(&c.leaderLease, "leader-lease", 10*time.Second, "with several replicas on PostgreSQL: how long the leader's lease lasts unrenewed, so how soon another replica takes over from one that died (at most this and a third of it)")
	fs.StringVar(&c.replanEvery, "replan-every", envOr(e, "GPUCAL_REPLAN_EVERY", "30s"), "replan the queue this often, and after every change (GPUCAL_REPLAN_EVERY)")
	c.bootstrapToken = e.getenv("GPUCAL_BOOTSTRAP_TOKEN")
	c.nodes = core.DefaultNodePolicy
	fs.DurationVar(&c.nodes.Interval, "heartbeat", c.nodes.Interval, "how often agents send heartbeats; a node is suspect after 3 missed")
	fs.DurationVar(&c.nodes.DownAfter, "node-down-after", c.nodes.DownAfter, "a node silent this long is down and its jobs fail")
	fs.DurationVar(&c.nodes.Drain.Grace, "drain-grace", c.nodes.Drain.Grace, "a job being stopped gets its checkpoint signal this long before its deadline")
	fs.DurationVar(&c.nodes.Drain.Term, "drain-term", c.nodes.Drain.Term, "… SIGTERM this long before it")
	fs.DurationVar(&c.nodes.Drain.Kill, "drain-kill", c.nodes.Drain.Kill, "… and SIGKILL this long before it")
	fs.DurationVar(&c.nodes.LogRetention, "log-retention", c.nodes.LogRetention, "how long the server keeps a job's log after it ended (0: for ever)")
	fs.BoolVar(&c.nodes.KillForeign, "kill-foreign-processes", false, "agents stop processes gpucal did not start on reserved GPUs when the window opens (default: report them only)")
	c.alerts = core.DefaultAlertPolicy
	fs.DurationVar(&c.alerts.RemindBefore, "remind-before", c.alerts.RemindBefore, "remind a reservation's holder this long before it opens (0: never)")
	fs.DurationVar(&c.alerts.NoShowAfter, "no-show-after", c.alerts.NoShowAfter, "tell the holder and the admins when a window has been open this long with its GPUs unused (0: never)")
	fs.DurationVar(&c.alerts.IdleAfter, "idle-after", c.alerts.IdleAfter, "tell a job's owner and the admins when its GPUs have been idle this long (0: never)")
	fs.DurationVar(&c.alerts.SaturatedWait, "saturated-wait", c.alerts.SaturatedWait, "tell the admins when 9 in 10 queued jobs wait longer than this (0: never)")
	c.chat.flags(fs, e)
	fs.BoolVar(&c.web.public, "web-public", envBool(e, "GPUCAL_WEB_PUBLIC"), "anyone who can reach the server may read the web calendar without signing in; booking still needs a sign-in (GPUCAL_WEB_PUBLIC=true)")
	fs.BoolVar(&c.web.insecureCookies, "web-insecure-cookies", false, "send the web session cookie without the Secure flag, for a site served over plain HTTP on an address other than localhost")
}

// replanPeriod reads --replan-every: a duration of at least a second.
func (c *serverConfig) replanPeriod() (time.Duration, error) {
	d, err := time.ParseDuration(c.replanEvery)
	if err != nil || d < time.Second {
		return 0, usagef("--replan-every %q: give a duration of at least 1s, like 30s or 2m", c.replanEvery)
	}
	return d, nil
}

// replanDebounce is how long the replan loop waits after a change for
// more changes: a burst of submissions costs one replan.
const replanDebounce = time.Second

func (c *serverConfig) dsn() string {
	if c.db != "" {
		return c.db
	}
	return "sqlite:" + filepath.Join(c.data, "gpucal.db")
}

func runServer(ctx context.Context, e *env, args []string) error {
	var cfg serverConfig
	fs := newFlagSet("server", e)
	cfg.flags(fs, e)
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	cfg.fromEnv(e)
	return serve(ctx, e, cfg, hooks{})
}

// hooks let the demo seed data and announce itself.
type hooks struct {
	prepare func(ctx context.Context, db *store.DB) error // after the database is open, before listening
	ready   func(url string)                              // once the listener is open
}

// serve runs the server until ctx ends.
func serve(ctx context.Context, e *env, cfg serverConfig, h hooks) error {
	log, err := newLogger(e, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	every, err := cfg.replanPeriod()
	if err != nil {
		return err
	}
	if err := cfg.nodes.Check(); err != nil {
		return usagef("%s", core.ErrorMessage(err))
	}
	db, err := store.Open(ctx, cfg.dsn(), log.With("component", "store"))
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer db.Close()
	svc := core.NewService(db, core.WithNodePolicy(cfg.nodes), core.WithAlertPolicy(cfg.alerts))

	if h.prepare != nil {
		if err := h.prepare(ctx, db); err != nil {
			return err
		}
	}
	if err := ensureAdmin(ctx, e, svc, cfg.bootstrapToken); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.addr, err)
	}
	loop := scheduler.New(svc, log.With("component", "scheduler"), every, replanDebounce)
	chat, err := setupChat(cfg.chat, svc, log, loop.Kick)
	if err != nil {
		ln.Close()
		return err
	}
	metrics := web.NewMetrics()
	elector := scheduler.NewElector(svc, scheduler.ElectorConfig{Holder: replicaName(), TTL: cfg.leaderLease,
		Always: db.Dialect() == "sqlite", Logger: log.With("component", "leader")})
	metrics.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gpucal", Name: "leader",
			Help: "1 while this server replica leads (plans, watches, notifies), else 0."},
			func() float64 { return map[bool]float64{true: 1}[elector.Leading()] }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "gpucal", Name: "leader_changes_total",
			Help: "Times this replica became or stopped being the leader."},
			func() float64 { return float64(elector.Changes()) }))
	dispatcher, err := newDispatcher(svc, chat, cfg.chat, log.With("component", "notify"), metrics.Registry)
	if err != nil {
		ln.Close()
		return err
	}
	// Browsers hear of every change made through this replica, and of
	// the leader's replans; a change made through another replica reaches
	// them with the leader's next replan (docs/web.md).
	events := web.NewBroker()
	planned := newPlanMetrics(metrics.Registry)
	loop.OnReplan(func(res core.ReplanResult, took time.Duration) {
		planned.observe(res, took)
		if res.Updated > 0 || len(res.Started) > 0 || len(res.Deferred) > 0 {
			events.Publish("plan")
		}
	})
	var handler http.Handler = web.NewServer(web.Config{Service: svc, Keys: db, Ready: db.Ping, Logger: log.With("component", "web"),
		OnChange: loop.Kick, Metrics: metrics, Leader: func() (bool, string) { return elector.Leading(), elector.Leader() },
		Events: events, Public: cfg.web.public, InsecureCookies: cfg.web.insecureCookies})
	if len(chat.routes) > 0 {
		mux := http.NewServeMux()
		for prefix, h := range chat.routes {
			mux.Handle(prefix, h)
		}
		mux.Handle("/", handler)
		handler = mux
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String()
	log.Info("gpucal server listening", "url", url, "db", db.Dialect(), "version", version)

	// The parts run until ctx ends or one of them fails; then all stop,
	// and serve waits for them before the database closes.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Every replica serves the API, the agents and chat; the leader alone
	// plans, watches, notifies and posts on a schedule (elector).
	leaderParts := append([]func(context.Context) error{
		loop.Run,
		func(ctx context.Context) error {
			// A new leader gives the agents a heartbeat period's grace from
			// when it began leading, so that a failover marks no node down.
			return scheduler.WatchNodes(ctx, svc, log.With("component", "nodes"), cfg.nodes.Interval, time.Now(), loop.Kick)
		},
	}, chat.leaderParts...)
	kick := func() {}
	if dispatcher != nil {
		// Events wait in the outbox until a chat app is configured.
		leaderParts = append(leaderParts, dispatcher.Run)
		kick = dispatcher.Kick
	}
	leaderParts = append(leaderParts, func(ctx context.Context) error {
		return scheduler.Watch(ctx, svc, log.With("component", "watch"), time.Minute, kick)
	})
	if summary, err := scheduleSummary(cfg.chat, svc, log.With("component", "summary")); err != nil {
		ln.Close()
		return err
	} else if summary != nil {
		leaderParts = append(leaderParts, summary)
	}
	parts := append([]func(context.Context) error{
		func(context.Context) error { return srv.Serve(ln) },
		func(ctx context.Context) error { return purgeKeys(ctx, db, svc, log) },
		func(ctx context.Context) error { return elector.Run(ctx, leaderParts...) },
	}, chat.parts...)
	errc := make(chan error, len(parts))
	running := len(parts)
	for _, p := range parts {
		go func() { errc <- p(ctx) }()
	}
	if h.ready != nil {
		h.ready(url)
	}
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errc:
		running--
	}
	log.Info("shutting down")
	stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	for ; running > 0; running-- {
		if err := <-errc; failed == nil || errors.Is(failed, http.ErrServerClosed) {
			failed = err
		}
	}
	for _, c := range chat.closers {
		c()
	}
	if errors.Is(failed, http.ErrServerClosed) {
		failed = nil
	}
	return errors.Join(failed, shutdownErr)
}

// ensureAdmin installs GPUCAL_BOOTSTRAP_TOKEN, or on a first start without
// one creates an admin token and prints it once.
func ensureAdmin(ctx context.Context, e *env, svc *core.Service, bootstrap string) error {
	if bootstrap != "" {
		if err := svc.InstallToken(ctx, "admin", bootstrap); err != nil {
			return fmt.Errorf("installing GPUCAL_BOOTSTRAP_TOKEN: %w", err)
		}
		return nil
	}
	has, err := svc.HasAdmin(ctx)
	if err != nil || has {
		return err
	}
	tok, err := svc.CreateToken(ctx, core.System, "admin", "first start", true)
	if err != nil {
		return fmt.Errorf("creating the first admin token: %w", err)
	}
	fmt.Fprintf(e.stderr, "\n  First start: created user \"admin\" with this API token (shown once, stored hashed):\n\n      %s\n\n  Use it with: gpucal login --token %s\n\n", tok, tok)
	return nil
}

// purgeKeys forgets idempotency keys after a day, as Stripe does.
func purgeKeys(ctx context.Context, db *store.DB, svc *core.Service, log *slog.Logger) error {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := db.PurgeKeys(ctx, time.Now().Add(-24*time.Hour)); err != nil && ctx.Err() == nil {
			log.Warn("purging idempotency keys", "err", err)
		} else if n > 0 {
			log.Debug("purged idempotency keys", "count", n)
		}
		if res, err := svc.Prune(ctx); err != nil && ctx.Err() == nil {
			log.Warn("pruning old job logs and join tokens", "err", err)
		} else if res.LogChunks+res.JoinTokens+res.Events > 0 {
			log.Info("pruned old job logs, join tokens and outbox events", "log_chunks", res.LogChunks, "join_tokens", res.JoinTokens, "events", res.Events)
		}
		if n, err := svc.PruneWebSessions(ctx); err != nil && ctx.Err() == nil {
			log.Warn("pruning expired web sessions", "err", err)
		} else if n > 0 {
			log.Debug("pruned expired web sessions", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newLogger(e *env, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return nil, usagef("--log-format %q: use text or json", format)
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "gpucal")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "gpucal")
	}
	return "gpucal-data"
}

func envOr(e *env, key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

// replicaName names this server replica in the leader's lease: host,
// process and a random part, new at every start.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "gpucal"
	}
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}

// envBool reads a true/false environment variable; anything else is false.
func envBool(e *env, key string) bool {
	v, _ := strconv.ParseBool(e.getenv(key))
	return v
}
