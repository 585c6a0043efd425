package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database size, on PostgreSQL

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// loadSpec is what `gpucal loadtest` runs.
type loadSpec struct {
	db          string
	replicas    int
	agents      int
	gpus        int // per node
	heartbeat   time.Duration
	clients     int
	think       time.Duration // a client's mean pause between bookings
	duration    time.Duration
	killAfter   time.Duration // 0: no failover
	leaderLease time.Duration
	json        bool
}

// runLoadtest starts server replicas on one database, on loopback, and
// drives them with simulated agents and booking clients for a while; then
// it checks what a trusted scheduler must keep (no lost acknowledged
// booking, no overlap, no node down, no notice sent twice) and reports
// rates, latencies and the database's growth. With --kill-leader-after it
// kills the leader replica (SIGKILL) during the load and reports how long
// the others took to elect a new one.
func runLoadtest(ctx context.Context, e *env, args []string) error {
	var c loadSpec
	fs := newFlagSet("loadtest", e)
	fs.StringVar(&c.db, "db", "", "database the replicas share: postgres://… or sqlite:PATH (default: a fresh SQLite file; better: GPUCAL_DB); it should be empty")
	fs.IntVar(&c.replicas, "replicas", 2, "server replicas to start (1 on SQLite)")
	fs.IntVar(&c.agents, "agents", 1000, "simulated node agents")
	fs.IntVar(&c.gpus, "gpus-per-node", 8, "GPUs each simulated node reports")
	fs.DurationVar(&c.heartbeat, "heartbeat", 5*time.Second, "how often each agent sends a heartbeat")
	fs.IntVar(&c.clients, "clients", 100, "concurrent booking clients")
	fs.DurationVar(&c.think, "think", time.Second, "each client's mean pause between two bookings (uniform from 0 to twice it; 0: none)")
	fs.DurationVar(&c.duration, "duration", 5*time.Minute, "how long the load runs")
	fs.DurationVar(&c.killAfter, "kill-leader-after", 0, "kill the leader replica with SIGKILL this long into the load (0: never)")
	fs.DurationVar(&c.leaderLease, "leader-lease", 10*time.Second, "the replicas' --leader-lease")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if c.db == "" {
		c.db = e.getenv("GPUCAL_DB")
	}
	switch {
	case c.agents < 1 || c.clients < 0 || c.gpus < 1 || c.replicas < 1:
		return usagef("--agents, --gpus-per-node and --replicas must be at least 1, --clients at least 0")
	case c.heartbeat < 100*time.Millisecond || c.duration < time.Second:
		return usagef("--heartbeat must be at least 100ms and --duration at least 1s")
	case c.killAfter > 0 && (c.replicas < 2 || c.killAfter >= c.duration):
		return usagef("--kill-leader-after needs --replicas 2 or more and must fall inside --duration")
	}
	dir, err := os.MkdirTemp("", "gpucal-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.db == "" {
		c.db = "sqlite:" + filepath.Join(dir, "gpucal.db")
	}
	if strings.HasPrefix(c.db, "sqlite:") && c.replicas > 1 {
		return usagef("several replicas need PostgreSQL; on SQLite use --replicas 1")
	}
	res, err := loadtest(ctx, e, c, dir)
	if err != nil {
		return err
	}
	if c.json {
		return printJSON(e.stdout, res)
	}
	res.print(e)
	if res.failed() {
		return errors.New("the load test found problems (above)")
	}
	return nil
}

// loadResult is what a load test measured and checked.
type loadResult struct {
	Database         string   `json:"database"`
	Replicas         int      `json:"replicas"`
	Agents           int      `json:"agents"`
	GPUs             int      `json:"gpus"`
	Clients          int      `json:"clients"`
	DurationS        float64  `json:"duration_s"`
	Heartbeats       int64    `json:"heartbeats"`
	HeartbeatsPerS   float64  `json:"heartbeats_per_s"`
	HeartbeatsWanted float64  `json:"heartbeats_per_s_wanted"`
	HeartbeatP50Ms   float64  `json:"heartbeat_p50_ms"`
	HeartbeatP99Ms   float64  `json:"heartbeat_p99_ms"`
	Bookings         int64    `json:"bookings"`
	BookingsPerS     float64  `json:"bookings_per_s"`
	Conflicts        int64    `json:"conflicts"`
	BookingP50Ms     float64  `json:"booking_p50_ms"`
	BookingP99Ms     float64  `json:"booking_p99_ms"`
	DBBytesBefore    int64    `json:"db_bytes_before"`
	DBBytesAfter     int64    `json:"db_bytes_after"`
	Errors           int64    `json:"errors"`
	ErrorSamples     []string `json:"error_samples"`
	Lost             int      `json:"lost_bookings"`
	Overlaps         int      `json:"overlaps"`
	NodesDown        int      `json:"nodes_down"`
	Notices          int      `json:"notices"`
	NoticesTwice     int      `json:"notices_sent_twice"`
	KilledAfterS     float64  `json:"killed_after_s,omitempty"`
	TakeoverS        float64  `json:"takeover_s,omitempty"`
}

func (r loadResult) failed() bool {
	return r.Errors > 0 || r.Lost > 0 || r.Overlaps > 0 || r.NodesDown > 0 || r.NoticesTwice > 0
}

func (r loadResult) print(e *env) {
	w := e.stdout
	fmt.Fprintf(w, "%d replica(s) on %s, %d agents (%d GPUs), %d booking clients, %.0f s\n", r.Replicas, r.Database, r.Agents, r.GPUs, r.Clients, r.DurationS)
	fmt.Fprintf(w, "heartbeats   %d, %.1f/s (wanted %.1f/s), p50 %.1f ms, p99 %.1f ms\n", r.Heartbeats, r.HeartbeatsPerS, r.HeartbeatsWanted, r.HeartbeatP50Ms, r.HeartbeatP99Ms)
	fmt.Fprintf(w, "bookings     %d acknowledged, %.1f/s, %d conflicts (409), p50 %.1f ms, p99 %.1f ms\n", r.Bookings, r.BookingsPerS, r.Conflicts, r.BookingP50Ms, r.BookingP99Ms)
	fmt.Fprintf(w, "database     %.1f MB → %.1f MB\n", float64(r.DBBytesBefore)/1e6, float64(r.DBBytesAfter)/1e6)
	if r.KilledAfterS > 0 {
		fmt.Fprintf(w, "failover     leader killed after %.0f s; a new leader after %.1f s\n", r.KilledAfterS, r.TakeoverS)
	}
	fmt.Fprintf(w, "notices      %d by email, %d sent twice\n", r.Notices, r.NoticesTwice)
	fmt.Fprintf(w, "checks       errors %d, lost bookings %d, overlaps %d, nodes down %d\n", r.Errors, r.Lost, r.Overlaps, r.NodesDown)
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(w, "  error: %s\n", s)
	}
}

// replica is one `gpucal server` process of the load test.
type replica struct {
	cmd *exec.Cmd
	url string
}

// loadtest runs the test; dir holds the replicas' homes.
func loadtest(ctx context.Context, e *env, c loadSpec, dir string) (loadResult, error) {
	res := loadResult{Database: strings.SplitN(c.db, ":", 2)[0], Replicas: c.replicas, Agents: c.agents, GPUs: c.agents * c.gpus,
		Clients: c.clients, HeartbeatsWanted: float64(c.agents) / c.heartbeat.Seconds()}
	mail, err := newMailCounter()
	if err != nil {
		return res, err
	}
	defer mail.close()
	token := "gpucal_loadtest_" + randomHex(12)
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	var reps []*replica
	defer func() {
		for _, r := range reps {
			if r.cmd.ProcessState == nil {
				r.cmd.Process.Signal(syscall.SIGTERM)
				r.cmd.Wait()
			}
		}
	}()
	for i := range c.replicas {
		r, err := startReplica(ctx, self, c, token, mail.url(), filepath.Join(dir, fmt.Sprintf("replica-%d", i)), e.stderr)
		if err != nil {
			return res, err
		}
		reps = append(reps, r)
	}
	fmt.Fprintf(e.stderr, "%d replica(s) ready: %s\n", len(reps), strings.Join(urls(reps), " "))
	admin := &web.Client{BaseURL: reps[0].url, Token: token}
	if res.DBBytesBefore, err = dbSize(ctx, c.db); err != nil {
		return res, err
	}

	// The people: u00…u99 with email addresses, so that the watch's
	// reminders go out by email and the fake mail server can count them.
	users := make([]string, max(c.clients, 1))
	for i := range users {
		users[i] = fmt.Sprintf("u%02d", i)
		if _, err := admin.AddUser(ctx, web.User{Name: users[i]}); err != nil {
			return res, fmt.Errorf("adding %s: %w", users[i], err)
		}
		p, err := admin.NotifyPrefs(ctx, users[i])
		if err == nil {
			p.Email = users[i] + "@loadtest.example.org"
			_, err = admin.SetNotifyPrefs(ctx, users[i], p)
		}
		if err != nil {
			return res, fmt.Errorf("setting %s's email: %w", users[i], err)
		}
	}

	// The agents join, spread over the replicas.
	jt, err := admin.CreateJoinToken(ctx, time.Hour)
	if err != nil {
		return res, err
	}
	lb := &balancer{replicas: reps}
	agents := make([]*simAgent, c.agents)
	if err := forEach(ctx, c.agents, 32, func(i int) error {
		a, err := joinAgent(ctx, lb, jt.Token, i, c.gpus)
		agents[i] = a
		return err
	}); err != nil {
		return res, fmt.Errorf("agents joining: %w", err)
	}
	fmt.Fprintf(e.stderr, "%d agents joined; load for %s\n", len(agents), c.duration)

	var stats loadStats
	// The agents beat on until the checks are done: a node must not look
	// silent because the test stopped.
	agentCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	var agentsDone sync.WaitGroup
	for i, a := range agents {
		agentsDone.Go(func() {
			a.run(agentCtx, lb, c.heartbeat, time.Duration(i)*c.heartbeat/time.Duration(len(agents)), &stats)
		})
	}
	loadCtx, stop := context.WithTimeout(ctx, c.duration)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range c.clients {
		wg.Go(func() { bookLoop(loadCtx, lb, token, users[i], c.think, &stats) })
	}
	if c.killAfter > 0 {
		wg.Go(func() {
			select {
			case <-loadCtx.Done():
				return
			case <-time.After(c.killAfter):
			}
			took, err := killLeader(loadCtx, lb, 3*c.leaderLease)
			if err != nil {
				stats.fail(err)
				fmt.Fprintln(e.stderr, err)
				return
			}
			res.KilledAfterS, res.TakeoverS = time.Since(start).Seconds()-took.Seconds(), took.Seconds()
			fmt.Fprintf(e.stderr, "killed the leader; a new one after %s\n", took.Round(10*time.Millisecond))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	res.DurationS = elapsed.Seconds()
	res.Heartbeats = stats.heartbeats.Load() // the load's, before the checks

	// Let the leader's next rounds run (node check, notices) before
	// looking.
	time.Sleep(max(3*time.Second, 2*c.heartbeat))
	live := lb.live()
	if len(live) == 0 {
		return res, errors.New("no replica is left")
	}
	// The checks read a lot; give the server time after the load.
	admin = &web.Client{BaseURL: live[0].url, Token: token, HTTP: &http.Client{Timeout: 5 * time.Minute}}
	res.Bookings, res.Conflicts = stats.bookings.Load(), stats.conflicts.Load()
	res.HeartbeatsPerS, res.BookingsPerS = float64(res.Heartbeats)/elapsed.Seconds(), float64(res.Bookings)/elapsed.Seconds()
	res.HeartbeatP50Ms, res.HeartbeatP99Ms = stats.hbLatency.quantiles()
	res.BookingP50Ms, res.BookingP99Ms = stats.bookLatency.quantiles()
	if res.DBBytesAfter, err = dbSize(ctx, c.db); err != nil {
		return res, err
	}
	if err := verifyLoad(ctx, admin, users, &stats, &res); err != nil {
		return res, err
	}
	stopAgents()
	agentsDone.Wait()
	res.Notices, res.NoticesTwice = mail.counts()
	res.Errors = stats.errors.Load()
	res.ErrorSamples = stats.samples()
	return res, nil
}

// startReplica starts one `gpucal server` on a loopback port and waits
// until it is ready.
func startReplica(ctx context.Context, self string, c loadSpec, token, smtpURL, home string, logTo io.Writer) (*replica, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "server", "--addr", "127.0.0.1:0", "--db", c.db, "--data", home,
		"--heartbeat", c.heartbeat.String(), "--leader-lease", c.leaderLease.String())
	cmd.Env = append(os.Environ(), "GPUCAL_BOOTSTRAP_TOKEN="+token, "GPUCAL_SMTP_URL="+smtpURL, "HOME="+home,
		"GPUCAL_SLACK_BOT_TOKEN=", "GPUCAL_DISCORD_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		// The replica's log: its address, and its errors passed on.
		sc := bufio.NewScanner(stderr)
		listening := regexp.MustCompile(`url=(http://\S+)`)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			if strings.Contains(sc.Text(), "level=ERROR") {
				fmt.Fprintln(logTo, "replica:", sc.Text())
			}
		}
	}()
	r := &replica{cmd: cmd}
	select {
	case r.url = <-found:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errors.New("a replica did not start within 2 minutes")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(r.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the replica at %s is not ready", r.url)
		}
	}
}

func urls(rs []*replica) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.url
	}
	return out
}

// balancer hands requests to the replicas in turn, as a load balancer
// does, and passes over the ones that were killed.
type balancer struct {
	mu       sync.Mutex
	replicas []*replica
	dead     map[*replica]bool
	next     int
}

func (b *balancer) pick(preferred int) *replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.replicas {
		r := b.replicas[(preferred+i)%len(b.replicas)]
		if !b.dead[r] {
			return r
		}
	}
	return b.replicas[0]
}

func (b *balancer) turn() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	return b.next
}

func (b *balancer) kill(r *replica) {
	b.mu.Lock()
	if b.dead == nil {
		b.dead = map[*replica]bool{}
	}
	b.dead[r] = true
	b.mu.Unlock()
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

func (b *balancer) live() []*replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*replica
	for _, r := range b.replicas {
		if !b.dead[r] {
			out = append(out, r)
		}
	}
	return out
}

// loadStats collects what the agents and clients saw.
type loadStats struct {
	heartbeats, bookings, conflicts, errors atomic.Int64
	hbLatency, bookLatency                  latencies
	mu                                      sync.Mutex
	errSamples                              []string
	acked                                   map[string]bool // bookings the server acknowledged
}

func (s *loadStats) fail(err error) {
	if s.errors.Add(1) <= 10 {
		s.mu.Lock()
		s.errSamples = append(s.errSamples, err.Error())
		s.mu.Unlock()
	}
}

func (s *loadStats) samples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.errSamples...)
}

func (s *loadStats) ack(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acked == nil {
		s.acked = map[string]bool{}
	}
	s.acked[id] = true
}

// latencies keeps durations for quantiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// quantiles returns the median and the 99th percentile in milliseconds.
func (l *latencies) quantiles() (float64, float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0, 0
	}
	d := slices.Clone(l.d)
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[min(int(p*float64(len(d))), len(d)-1)]) / 1e6 }
	return q(0.5), q(0.99)
}

// simAgent is a node agent that only heartbeats: its GPUs idle, no jobs.
type simAgent struct {
	hb    core.Heartbeat
	cred  string
	index int
}

func joinAgent(ctx context.Context, lb *balancer, joinToken string, i, gpus int) (*simAgent, error) {
	hb := core.Heartbeat{Node: fmt.Sprintf("load-%04d", i), Agent: "loadtest"}
	for g := range gpus {
		hb.GPUs = append(hb.GPUs, core.GPUReport{Index: g, UUID: fmt.Sprintf("GPU-load-%04d-%d", i, g), Name: "NVIDIA H100 80GB HBM3",
			MemoryMiB: 81559, Util: 0, TempC: 35, PowerW: 70})
	}
	var err error
	for attempt := range 3 {
		c := &web.Client{BaseURL: lb.pick(i + attempt).url, Token: joinToken}
		var j web.JoinResponse
		if j, err = c.Join(ctx, hb); err == nil {
			return &simAgent{hb: hb, cred: j.Credential, index: i}, nil
		}
	}
	return nil, err
}

// run heartbeats every period from offset on until ctx ends, to the
// replica the balancer gives it (another after a failure).
func (a *simAgent) run(ctx context.Context, lb *balancer, every, offset time.Duration, s *loadStats) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(offset):
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Duration
	for {
		hb := a.hb
		hb.Latency = last
		hb.Jobs = []core.JobReport{}
		var err error
		for attempt := range 3 {
			c := &web.Client{BaseURL: lb.pick(a.index + attempt).url, Token: a.cred}
			begin := time.Now()
			if _, err = c.Heartbeat(ctx, hb); err == nil {
				last = time.Since(begin)
				s.hbLatency.add(last)
				s.heartbeats.Add(1)
				break
			}
			if ctx.Err() != nil {
				return
			}
		}
		if err != nil {
			s.fail(fmt.Errorf("heartbeat of %s: %w", a.hb.Node, err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bookLoop books for user until ctx ends, pausing about think between
// bookings: 1–4 H100s for 1–4 hours, most
// in the next week, one in ten within the next quarter hour (so that the
// watch reminds the owner by email). A refusal for a conflict is fine; a
// failure is retried with the same idempotency key on the next replica.
func bookLoop(ctx context.Context, lb *balancer, token, user string, think time.Duration, s *loadStats) {
	rng := mrand.New(mrand.NewPCG(mrand.Uint64(), mrand.Uint64()))
	for ctx.Err() == nil {
		if think > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(rng.Int64N(int64(2 * think)))):
			}
		}
		now := time.Now().UTC()
		start := now.Add(time.Duration(rng.IntN(7*24*12)+12) * 5 * time.Minute).Truncate(5 * time.Minute)
		if rng.IntN(10) == 0 {
			start = now.Add(time.Duration(2+rng.IntN(12)) * time.Minute).Truncate(time.Minute)
		}
		req := web.BookRequest{GPUs: 1 + rng.IntN(4), Model: "h100", Owner: user, Note: "loadtest",
			Start: start.Format(time.RFC3339), End: start.Add(time.Duration(1+rng.IntN(4)) * time.Hour).Format(time.RFC3339)}
		key := randomHex(16)
		var err error
		for attempt := range 3 {
			c := &web.Client{BaseURL: lb.pick(lb.turn() + attempt).url, Token: token}
			begin := time.Now()
			var r web.Reservation
			r, err = c.Book(ctx, req, key)
			var apiErr *web.APIError
			switch {
			case err == nil:
				s.bookLatency.add(time.Since(begin))
				s.bookings.Add(1)
				s.ack(r.ID)
			case errors.As(err, &apiErr) && apiErr.Code == string(core.CodeConflict):
				s.bookLatency.add(time.Since(begin))
				s.conflicts.Add(1)
				err = nil
			case ctx.Err() != nil:
				return
			default:
				continue
			}
			break
		}
		if err != nil {
			s.fail(fmt.Errorf("booking for %s: %w", user, err))
		}
	}
}

// killLeader kills the replica that leads and returns how long it took
// until another one did (at most within).
func killLeader(ctx context.Context, lb *balancer, within time.Duration) (time.Duration, error) {
	// An overloaded replica may not answer /readyz at once: ask again
	// for a while.
	var leader *replica
	for deadline := time.Now().Add(within); leader == nil && time.Now().Before(deadline) && ctx.Err() == nil; {
		for _, r := range lb.live() {
			if ok, _ := leads(r); ok {
				leader = r
			}
		}
		if leader == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if leader == nil {
		return 0, errors.New("failover: no replica said it leads, so none was killed")
	}
	lb.kill(leader)
	killed := time.Now()
	for time.Since(killed) < within && ctx.Err() == nil {
		for _, r := range lb.live() {
			if ok, _ := leads(r); ok {
				return time.Since(killed), nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(killed), fmt.Errorf("failover: no replica led within %s of the kill", within)
}

// leads asks a replica's /readyz whether it leads.
func leads(r *replica) (bool, error) {
	resp, err := http.Get(r.url + "/readyz")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var body struct {
		Leader bool `json:"leader"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err
	}
	return body.Leader, nil
}

// verifyLoad checks the database after the load: every acknowledged
// booking is there, no two holding bookings share a GPU at once, and no
// node is down (the agents still beat while it looks).
func verifyLoad(ctx context.Context, admin *web.Client, users []string, s *loadStats, res *loadResult) error {
	found := map[string]bool{}
	type span struct{ start, end time.Time }
	perGPU := map[int64][]span{}
	for _, u := range users {
		rs, err := admin.Reservations(ctx, web.ReservationQuery{User: u, From: time.Now().Add(-24 * time.Hour), To: time.Now().Add(30 * 24 * time.Hour)})
		if err != nil {
			return fmt.Errorf("listing %s's bookings: %w", u, err)
		}
		for _, r := range rs {
			found[r.ID] = true
			if r.State == "cancelled" {
				continue
			}
			for _, g := range r.GPUs {
				perGPU[g.ID] = append(perGPU[g.ID], span{r.Start, r.End})
			}
		}
	}
	s.mu.Lock()
	for id := range s.acked {
		if !found[id] {
			res.Lost++
		}
	}
	s.mu.Unlock()
	for _, spans := range perGPU {
		slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
		for i := 1; i < len(spans); i++ {
			if spans[i].start.Before(spans[i-1].end) {
				res.Overlaps++
			}
		}
	}
	nodes, err := admin.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.State == "down" {
			res.NodesDown++
		}
	}
	return nil
}

// dbSize is the database's size in bytes: pg_database_size on
// PostgreSQL, the file and its write-ahead log on SQLite.
func dbSize(ctx context.Context, dsn string) (int64, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		path, _, _ = strings.Cut(path, "?")
		var n int64
		for _, f := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(f); err == nil {
				n += fi.Size()
			}
		}
		return n, nil
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// forEach runs fn(0…n-1) with at most par at once and returns the first error.
func forEach(ctx context.Context, n, par int, fn func(int) error) error {
	sem := make(chan struct{}, par)
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for i := range n {
		if first.Load() != nil || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return ctx.Err()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
