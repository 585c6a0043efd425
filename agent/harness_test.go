package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
	"github.com/prometheus/client_golang/prometheus"
)

const node = "node-1"

// fastTiming is a drain ladder short enough for tests.
var fastTiming = core.DrainTiming{Grace: time.Second, Term: 600 * time.Millisecond, Kill: 200 * time.Millisecond}

// testGPUs is a gpu.Reader over fixed GPUs whose processes follow Busy, as
// simulated GPUs do in cmd/gpucal.
type testGPUs struct {
	mu      sync.Mutex
	devices []gpu.Device
	procs   map[string][]int // by UUID
	sticky  map[string]bool  // GPUs whose processes ignore Busy(…, false): they outlive their jobs
	err     error
	// foreign are processes on each GPU that no job started, with owners.
	foreign map[string][]gpu.Process
}

func newTestGPUs(uuids ...string) *testGPUs {
	g := &testGPUs{procs: map[string][]int{}, sticky: map[string]bool{}}
	for i, u := range uuids {
		g.devices = append(g.devices, gpu.Device{
			Index: i, Minor: i, UUID: u, Name: "NVIDIA H100 80GB HBM3",
			Present:        gpu.FieldMemory | gpu.FieldGPUUtil | gpu.FieldTemperature | gpu.FieldPower | gpu.FieldXID | gpu.FieldProcesses,
			MemoryTotalMiB: 81920, MemoryFreeMiB: 81920, TemperatureC: 30, PowerW: 70,
		})
	}
	return g
}

func (g *testGPUs) Read(ctx context.Context) ([]gpu.Device, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return nil, g.err
	}
	out := slices.Clone(g.devices)
	for i := range out {
		d := &out[i]
		for _, pid := range g.procs[d.UUID] {
			d.Processes = append(d.Processes, gpu.Process{PID: pid, UsedMiB: 30000, UsedKnown: true})
			d.GPUUtil, d.MemoryUsedMiB, d.MemoryFreeMiB = 95, d.MemoryUsedMiB+30000, d.MemoryFreeMiB-30000
		}
		for _, p := range g.foreign[d.UUID] {
			if syscall.Kill(p.PID, 0) == nil { // NVML lists live processes only
				d.Processes = append(d.Processes, p)
			}
		}
	}
	return out, nil
}

func (g *testGPUs) Close() error { return nil }

// Busy is Config.Busy.
func (g *testGPUs) Busy(uuid string, pid int, busy bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case busy && !slices.Contains(g.procs[uuid], pid):
		g.procs[uuid] = append(g.procs[uuid], pid)
	case !busy && !g.sticky[uuid]:
		g.procs[uuid] = slices.DeleteFunc(g.procs[uuid], func(p int) bool { return p == pid })
	}
}

func (g *testGPUs) set(f func(g *testGPUs)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// fakeConn is the server: it records every heartbeat, answers with the
// desired state a test set (or fails while down) and keeps the logs,
// refusing an append at the wrong offset as the server does.
type fakeConn struct {
	mu      sync.Mutex
	beats   []core.Heartbeat
	desired core.DesiredState
	down    bool
	logs    map[int64][]byte
	chunks  []int
	// onAppend, when set, may change the stored log before each append
	// is checked against it: a server that lost some.
	onAppend   func(job int64, stored []byte) []byte
	mismatches int
}

func newFakeConn() *fakeConn { return &fakeConn{logs: map[int64][]byte{}} }

func (c *fakeConn) Heartbeat(ctx context.Context, hb core.Heartbeat) (core.DesiredState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats = append(c.beats, hb)
	if c.down {
		return core.DesiredState{}, errors.New("dial tcp 10.0.0.1:443: connection refused")
	}
	return c.desired, nil
}

func (c *fakeConn) AppendLog(ctx context.Context, job, offset int64, data []byte) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return 0, errors.New("dial tcp 10.0.0.1:443: connection refused")
	}
	if c.onAppend != nil {
		c.logs[job] = c.onAppend(job, c.logs[job])
	}
	if have := int64(len(c.logs[job])); offset != have {
		c.mismatches++
		return 0, &LogOffsetError{Size: have}
	}
	c.logs[job] = append(c.logs[job], data...)
	c.chunks = append(c.chunks, len(data))
	return int64(len(c.logs[job])), nil
}

// set makes ds the server's answer from now on and returns how many
// heartbeats came before: the first answered with ds has that index.
func (c *fakeConn) set(ds core.DesiredState) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds.Node = node
	c.desired = ds
	return len(c.beats)
}

func (c *fakeConn) setDown(down bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
	return len(c.beats)
}

func (c *fakeConn) log(job int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.logs[job])
}

// harness runs agents on one state directory against a fakeConn and
// testGPUs.
type harness struct {
	t       *testing.T
	conn    *fakeConn
	gpus    *testGPUs
	sampler *gpu.Sampler
	dir     string
	agent   *Agent               // the one running
	reg     *prometheus.Registry // the running agent's metrics
	stopRun func()
	pids    map[int]bool // jobs seen, killed at cleanup
	// cgroupRoot is the agents' Config.CgroupRoot; "" for none.
	cgroupRoot string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, conn: newFakeConn(), gpus: newTestGPUs("GPU-a", "GPU-b"), dir: t.TempDir(), pids: map[int]bool{}}
	h.sampler = gpu.NewSampler(h.gpus, gpu.SamplerConfig{Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	h.sampler.Refresh(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.sampler.Run(ctx) }()
	t.Cleanup(func() {
		h.stop()
		cancel()
		<-done
		h.killJobs()
	})
	return h
}

// start starts a new Agent on the harness's state directory, after
// tweaks to its pacing.
func (h *harness) start(tweaks ...func(*Agent)) *Agent {
	h.t.Helper()
	h.reg = prometheus.NewRegistry()
	a, err := New(Config{
		Name: node, Version: "test", Conn: h.conn, Sampler: h.sampler,
		StateDir: h.dir, Interval: 30 * time.Millisecond, Server: "https://gpucal.example.org",
		Logger: testLogger(h.t), Registerer: h.reg, Busy: h.gpus.Busy,
		CgroupRoot: h.cgroupRoot,
	})
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	a.logEvery, a.gpuCheckFor, a.gpuCheckEvery, a.leftoverKill = 30*time.Millisecond, 2*time.Second, 20*time.Millisecond, 500*time.Millisecond
	a.progressEvery = 30 * time.Millisecond
	for _, f := range tweaks {
		f(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	h.agent = a
	h.stopRun = func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}
	return a
}

// stop stops the running agent, leaving its jobs running.
func (h *harness) stop() {
	if h.stopRun != nil {
		h.stopRun()
		h.stopRun = nil
	}
}

// killJobs kills the process group of every job reported.
func (h *harness) killJobs() {
	h.conn.mu.Lock()
	for _, hb := range h.conn.beats {
		for _, r := range hb.Jobs {
			if r.PID > 0 {
				h.pids[r.PID] = true
			}
		}
	}
	h.conn.mu.Unlock()
	for pid := range h.pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// await waits for a heartbeat from index since on for which ok holds and
// returns it.
func (h *harness) await(since int, what string, ok func(core.Heartbeat) bool) core.Heartbeat {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h.conn.mu.Lock()
		beats := h.conn.beats[min(since, len(h.conn.beats)):]
		i := slices.IndexFunc(beats, ok)
		var hb core.Heartbeat
		if i >= 0 {
			hb = beats[i]
		}
		h.conn.mu.Unlock()
		if i >= 0 {
			return hb
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no heartbeat showed %s; the last: %+v", what, h.last())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitJob waits for a heartbeat from index since on that reports job id
// such that ok holds, and returns the report.
func (h *harness) awaitJob(since int, id int64, what string, ok func(core.JobReport) bool) core.JobReport {
	h.t.Helper()
	hb := h.await(since, core.JobName(id)+" "+what, func(hb core.Heartbeat) bool {
		r, found := jobIn(hb, id)
		return found && ok(r)
	})
	r, _ := jobIn(hb, id)
	return r
}

// awaitLog waits until the server has s in job id's log.
func (h *harness) awaitLog(id int64, s string) {
	h.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(h.conn.log(id), s); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatalf("the server's log of %s never showed %q; it has %q", core.JobName(id), s, h.conn.log(id))
		}
	}
}

func (h *harness) last() core.Heartbeat {
	h.conn.mu.Lock()
	defer h.conn.mu.Unlock()
	if len(h.conn.beats) == 0 {
		return core.Heartbeat{}
	}
	return h.conn.beats[len(h.conn.beats)-1]
}

func (h *harness) beats() int {
	h.conn.mu.Lock()
	defer h.conn.mu.Unlock()
	return len(h.conn.beats)
}

func jobIn(hb core.Heartbeat, id int64) (core.JobReport, bool) {
	i := slices.IndexFunc(hb.Jobs, func(r core.JobReport) bool { return r.Job == id })
	if i < 0 {
		return core.JobReport{}, false
	}
	return hb.Jobs[i], true
}

func gpuIn(hb core.Heartbeat, uuid string) core.GPUReport {
	i := slices.IndexFunc(hb.GPUs, func(g core.GPUReport) bool { return g.UUID == uuid })
	if i < 0 {
		return core.GPUReport{}
	}
	return hb.GPUs[i]
}

// shJob orders job id to run sh -c script on gpus.
func shJob(id int64, script string, gpus ...string) core.JobOrder {
	return core.JobOrder{Job: id, Command: []string{"sh", "-c", script}, GPUs: gpus, Project: "llm"}
}

// liveGroup reports whether a live process is in process group pgid.
func liveGroup(t *testing.T, pgid int) bool {
	t.Helper()
	procs, err := run.Processes()
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(procs, func(s run.Stat) bool { return s.PGID == pgid && s.Live() })
}

// groupAlive reports whether kill finds process group pgid (zombies too).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func logFile(h *harness, id int64) string {
	return filepath.Join(h.dir, "logs", core.JobName(id)+".log")
}

// testLogger logs to the test's output, shown when it fails or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// metric returns the value of the counter or gauge name whose labels
// include the pairs given, from the running agent's registry.
func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	v, ok := h.lookMetric(name, labels...)
	if !ok {
		h.t.Fatalf("no metric %s%v", name, labels)
	}
	return v
}

// lookMetric is metric's value, and whether the agent has it yet.
func (h *harness) lookMetric(name string, labels ...string) (float64, bool) {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				match = match && have[labels[i]] == labels[i+1]
			}
			if match {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
