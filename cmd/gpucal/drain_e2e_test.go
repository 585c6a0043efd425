package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent"
	agentrun "github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// The node agent end to end (issue 5): a real server, a real `gpucal
// agent` process on simulated GPUs, real jobs on this machine.

// cgoBinary is gpucal built with cgo, which the simulated GPUs need.
var cgoBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gpucal-agent-e2e-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gpucal")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-O2 -Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building gpucal with cgo (the simulated GPUs need it; install gcc): %v\n%s", err, out)
	}
	return bin, nil
})

// Timings short enough for a test, in the order the server checks them.
var agentServerFlags = []string{"--heartbeat", "200ms", "--node-down-after", "3s", "--replan-every", "1s",
	"--drain-grace", "3s", "--drain-term", "2s", "--drain-kill", "1s"}

// nodeAgent is a running `gpucal agent` process.
type agentProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	args   []string
}

// startAgentProc runs `gpucal agent` for node name on two simulated H100s
// with its state in dir.
func startAgentProc(t *testing.T, serverURL, name, dir, joinToken string) *agentProc {
	t.Helper()
	args := []string{"agent", "--server", serverURL, "--name", name, "--fake-gpus", "2xH100", "--state-dir", dir,
		"--metrics-addr", "127.0.0.1:0", "--interval", "200ms", "--run-as-self"}
	if joinToken != "" {
		args = append(args, "--join-token", joinToken)
	}
	a := &agentProc{t: t, stderr: &bytes.Buffer{}, args: args}
	a.start()
	t.Cleanup(a.kill)
	return a
}

func (a *agentProc) start() {
	a.cmd = exec.Command(mustCgoBinary(a.t), a.args...)
	a.cmd.Env = append(os.Environ(), "HOME="+a.t.TempDir())
	a.cmd.Stderr = &lockedWriter{w: a.stderr}
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
}

func mustCgoBinary(t *testing.T) string {
	bin, err := cgoBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// kill ends the agent with SIGKILL; its jobs live on.
func (a *agentProc) kill() {
	if a.cmd.ProcessState == nil {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	}
	if a.t.Failed() {
		a.t.Logf("agent log:\n%s", a.stderr.String())
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// freeAddr returns a loopback address nothing listens on, so that a
// restarted server comes back where its agents expect it.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitFor polls cond every 20 ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

func nodeState(t *testing.T, c *web.Client, name string) string {
	nodes, err := c.Nodes(context.Background())
	if err != nil {
		return "unreachable"
	}
	for _, n := range nodes {
		if n.Name == name {
			return n.State
		}
	}
	return "absent"
}

func joinTokenFor(t *testing.T, s *server) string {
	t.Helper()
	tok, err := s.client("t0").CreateJoinToken(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// groupAlive reports whether any live process of group pgid is left.
// Zombies do not count: they hold no GPU memory and run nothing, and who
// reaps an orphan (PID 1, a subreaper) and when is not the agent's doing.
func groupAlive(t *testing.T, pgid int) bool {
	ps, err := agentrun.Processes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.PGID == pgid && p.Live() {
			return true
		}
	}
	return false
}

// obstinate ignores SIGTERM (and only notes the checkpoint signal), and
// forks two children that ignore SIGTERM too: only SIGKILL to the whole
// group ends it.
var obstinate = []string{"sh", "-c", `trap 'echo checkpoint requested' USR1; trap '' TERM; echo started; ` +
	`(trap '' TERM; exec sleep 1000) & (trap '' TERM; exec sleep 1000) & while :; do sleep 0.2; done`}

// TestDrainEndToEnd: a preemptible job that ignores SIGTERM and forks
// children runs on the GPUs a reservation needs in a few seconds; it is
// signalled and killed, and no process of it is left when the window
// opens. The same with the agent killed (kill -9) and restarted in the
// middle of the drain, and with the server gone across the window start.
func TestDrainEndToEnd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent runs jobs on Linux only")
	}
	for _, mode := range []string{"plain", "agent restarted mid-drain", "server unreachable"} {
		t.Run(strings.ReplaceAll(mode, " ", "-"), func(t *testing.T) {
			t.Parallel()
			drainScenario(t, mode)
		})
	}
}

func drainScenario(t *testing.T, mode string) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	addr := freeAddr(t)
	flags := append([]string{"--addr", addr}, agentServerFlags...)
	s := startServer(t, db, flags...)
	admin := s.client("t0")
	stateDir := t.TempDir()
	// Each scenario its own node name: the agents share this host's cgroup
	// root, under which each node gets a cgroup of its own.
	name := map[string]string{"plain": "drain-plain", "agent restarted mid-drain": "drain-restart", "server unreachable": "drain-cutoff"}[mode]
	ag := startAgentProc(t, s.url, name, stateDir, joinTokenFor(t, s))
	waitFor(t, 60*time.Second, name+" to join", func() bool { return nodeState(t, admin, name) == "ready" })

	// Where the agent can give jobs cgroups (root, cgroup v2), the job also
	// leaves a child outside its process group, which only the cgroup
	// catches.
	command := obstinate
	withCgroup := agent.DefaultCgroupRoot() != ""
	if withCgroup {
		command = []string{"sh", "-c", `setsid sh -c "trap '' TERM; exec sleep 1000" & echo "escaped $!"; ` + obstinate[2]}
	}
	j, err := admin.Submit(ctx, web.SubmitRequest{GPUs: 2, Model: "h100", Name: "obstinate", Preemptible: true, Command: command}, "")
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	waitFor(t, 20*time.Second, j.ID+" to run", func() bool {
		got, err := admin.Job(ctx, j.ID)
		if err == nil && got.State == "running" && len(got.Runs) == 1 && got.Runs[0].PID > 0 {
			pid = got.Runs[0].PID
			return true
		}
		return false
	})
	if !groupAlive(t, pid) {
		t.Fatalf("%s's process group %d is not there", j.ID, pid)
	}

	// The admin books the node's two GPUs from 7 s on.
	start := time.Now().UTC().Add(7 * time.Second).Truncate(time.Second)
	r, err := admin.Book(ctx, web.BookRequest{GPUs: 2, Model: "h100", Start: start.Format(time.RFC3339),
		End: start.Add(10 * time.Minute).Format(time.RFC3339)}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the drain order", func() bool {
		got, err := admin.Job(ctx, j.ID)
		return err == nil && got.Prediction != nil && got.Prediction.Drain != nil && got.Prediction.Drain.Reservation == r.ID
	})

	switch mode {
	case "agent restarted mid-drain":
		// After the checkpoint signal (3 s before), before SIGTERM (2 s before).
		time.Sleep(time.Until(start.Add(-2500 * time.Millisecond)))
		ag.kill()
		if !groupAlive(t, pid) {
			t.Fatal("killing the agent took its job with it")
		}
		ag.start()
	case "server unreachable":
		time.Sleep(600 * time.Millisecond) // a few heartbeats carry the window and the ladder
		s.kill()
	}

	// The test's own watch: when is the group seen gone?
	var gone time.Time
	waitFor(t, time.Until(start)+10*time.Second, "the job's processes to be gone", func() bool {
		if groupAlive(t, pid) {
			return false
		}
		gone = time.Now()
		return true
	})
	observed := start.Sub(gone)
	if observed < 0 {
		t.Errorf("%s: processes still there %s after the window opened", mode, -observed)
	}

	if mode == "server unreachable" {
		s = startServer(t, db, flags...)
		admin = s.client("t0")
	}
	var got web.Job
	waitFor(t, 20*time.Second, j.ID+" to end preempted", func() bool {
		got, err = admin.Job(ctx, j.ID)
		return err == nil && got.State == "preempted"
	})
	run := got.Runs[0]
	if run.Margin == nil || *run.Margin < 0 {
		t.Fatalf("%s: margin %v reported by the agent (run %+v), want ≥ 0", mode, run.Margin, run)
	}
	if run.Stopped != core.StopDrain {
		t.Errorf("%s: stopped %q, want drain", mode, run.Stopped)
	}
	reportMargin(t, mode, *run.Margin, observed)

	// The log came along: the job's first line and the checkpoint request.
	var log string
	waitFor(t, 10*time.Second, "the whole log", func() bool {
		p, err := admin.Log(ctx, j.ID, 0, 0)
		log = string(p.Data)
		return err == nil && p.Done && strings.Contains(log, "started\n") && strings.Contains(log, "checkpoint requested")
	})
	if withCgroup {
		var escaped int
		if _, err := fmt.Sscanf(log[strings.Index(log, "escaped "):], "escaped %d", &escaped); err != nil || escaped <= 0 {
			t.Fatalf("no escaped child in the log %q: %v", log, err)
		}
		if st, err := agentrun.ReadStat(escaped); err == nil && st.Live() {
			t.Errorf("%s: the child that left the job's process group (pid %d) is alive after the drain", mode, escaped)
		}
	}
}

// reportMargin prints the margin between the last process exiting and the
// window start, and appends it to $GPUCAL_DRAIN_REPORT when set (make
// test prints that file).
func reportMargin(t *testing.T, mode string, agent, observed time.Duration) {
	line := fmt.Sprintf("drain margin (%s): %s before the window opened as the agent measured it, %s as the test saw it\n",
		mode, agent.Round(time.Millisecond), observed.Round(time.Millisecond))
	t.Log(strings.TrimSpace(line))
	if path := os.Getenv("GPUCAL_DRAIN_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.WriteString(line)
	}
}

// TestNodeLiveness: an agent that stops answering makes its node suspect,
// then down; it is ready again once the agent answers. A node's credential
// reports for that node only.
func TestNodeLiveness(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent runs on Linux only")
	}
	t.Parallel()
	s := startServer(t, storetest.SQLite(t), agentServerFlags...)
	admin := s.client("t0")
	dir := t.TempDir()
	ag := startAgentProc(t, s.url, "n1", dir, joinTokenFor(t, s))
	waitFor(t, 60*time.Second, "n1 to join", func() bool { return nodeState(t, admin, "n1") == "ready" })
	startAgentProc(t, s.url, "n2", t.TempDir(), joinTokenFor(t, s))
	waitFor(t, 60*time.Second, "n2 to join", func() bool { return nodeState(t, admin, "n2") == "ready" })

	// n1's credential, as the agent keeps it, cannot speak for n2.
	b, err := os.ReadFile(filepath.Join(dir, credentialFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, credentialFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("credential file mode %v, want 0600", fi.Mode().Perm())
	}
	var cred agentCredential
	if err := json.Unmarshal(b, &cred); err != nil {
		t.Fatal(err)
	}
	_, err = (&web.Client{BaseURL: s.url, Token: cred.Credential}).Heartbeat(context.Background(), core.Heartbeat{Node: "n2"})
	var api *web.APIError
	if !errors.As(err, &api) || api.Status != 403 {
		t.Errorf("n1's credential reporting for n2: %v, want 403", err)
	}

	ag.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	waitFor(t, 5*time.Second, "n1 to be suspect", func() bool { return nodeState(t, admin, "n1") == "suspect" })
	suspectAfter := time.Since(stopped)
	waitFor(t, 10*time.Second, "n1 to be down", func() bool { return nodeState(t, admin, "n1") == "down" })
	downAfter := time.Since(stopped)
	if nodeState(t, admin, "n2") != "ready" {
		t.Errorf("n2 is %s while n1 is silent", nodeState(t, admin, "n2"))
	}
	ag.cmd.Process.Signal(syscall.SIGCONT)
	waitFor(t, 5*time.Second, "n1 to be ready again", func() bool { return nodeState(t, admin, "n1") == "ready" })
	t.Logf("silent agent: suspect after %s, down after %s, ready again %s after it answered",
		suspectAfter.Round(10*time.Millisecond), downAfter.Round(10*time.Millisecond), time.Since(stopped.Add(downAfter)).Round(10*time.Millisecond))
	if suspectAfter < 600*time.Millisecond || downAfter < 3*time.Second {
		t.Errorf("suspect after %s (want ≥ 3 heartbeats of 200ms), down after %s (want ≥ 3s)", suspectAfter, downAfter)
	}
}
