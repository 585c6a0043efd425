package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpucal/gpucal/agent"
	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/gpu/nvmlreader"
	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// agentConfig is what one node agent runs with.
type agentConfig struct {
	name        string // the node's name; the host name when ""
	fake        string // simulated GPUs: "8xH100"; real ones when ""
	seed        uint64
	metricsAddr string // "" serves no metrics
	interval    time.Duration
	server      string // the gpucal server's URL; "" runs metrics only
	joinToken   string
	stateDir    string
	runAsSelf   bool   // run every job as the agent's user, whoever owns it
	minUID      int    // the lowest user ID a root agent runs jobs as
	cgroupRoot  string // "auto", "off" or the parent cgroup v2 directory of the jobs' cgroups
}

// runAgent runs the node agent (DESIGN §3, docs/agent.md): it reads the
// node's GPUs through NVML (or simulates them), serves their metrics under
// NVIDIA DCGM exporter's names, and, given a server, joins it, sends
// heartbeats, runs the jobs the plan gives the node and keeps reserved
// windows free.
func runAgent(ctx context.Context, e *env, args []string) error {
	var cfg agentConfig
	fs := newFlagSet("agent", e)
	fs.StringVar(&cfg.server, "server", e.getenv("GPUCAL_SERVER"), "the gpucal server's URL (GPUCAL_SERVER); without it the agent only serves metrics")
	fs.StringVar(&cfg.joinToken, "join-token", e.getenv("GPUCAL_JOIN_TOKEN"), "join token from `gpucal node join-token` (GPUCAL_JOIN_TOKEN); needed once, to get this node's credential")
	fs.StringVar(&cfg.stateDir, "state-dir", envOr(e, "GPUCAL_AGENT_STATE", defaultAgentStateDir()), "the node's credential, its jobs' state and logs (GPUCAL_AGENT_STATE)")
	fs.StringVar(&cfg.fake, "fake-gpus", "", "simulate GPUs instead of reading them: 8xH100, 2xA100-80GB, or a comma list")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", ":9400", "address Prometheus scrapes the GPU metrics on (/metrics); \"\" for none")
	fs.DurationVar(&cfg.interval, "interval", gpu.DefaultSampleInterval, "how often the GPUs are read")
	fs.StringVar(&cfg.name, "name", "", "this node's name (default: the host name)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "with --fake-gpus: seed of the simulated GPUs' UUIDs and readings (default: from the node's name)")
	fs.StringVar(&cfg.cgroupRoot, "cgroup-root", envOr(e, "GPUCAL_CGROUP_ROOT", "auto"), "where each job gets a cgroup v2 of its own: auto (the cgroup systemd delegated, else /sys/fs/cgroup/gpucal for root), off, or a directory (GPUCAL_CGROUP_ROOT)")
	fs.IntVar(&cfg.minUID, "min-uid", 1000, "a root agent runs jobs as their owners' accounts only when the user ID is at least this: never as root or a system account")
	fs.BoolVar(&cfg.runAsSelf, "run-as-self", false, "run every job as the agent's own user instead of its owner (an agent that is not root must)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: gpucal agent --server URL --join-token TOKEN [--name NODE] [--metrics-addr :9400] [--fake-gpus 8xH100]\n\n"+
			"Runs on each GPU node. Joins the gpucal server (once, with a join token; the node's credential is\n"+
			"kept in --state-dir), reports its GPUs and jobs every few seconds, starts the jobs the plan gives\n"+
			"this node as their owners, and stops preemptible jobs before reserved windows open. Serves the GPUs'\n"+
			"metrics under NVIDIA DCGM exporter's names. Without --server it serves the metrics only.\n\nFlags:")
		fs.PrintDefaults()
	}
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if cfg.interval < 100*time.Millisecond {
		return usagef("--interval must be at least 100ms, not %s", cfg.interval)
	}
	if cfg.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("the host name is unknown (%v); name this node with --name", err)
		}
		cfg.name = strings.ToLower(h)
	}
	if !flagSet(fs, "seed") {
		// Simulated GPUs take their UUIDs from the seed: nodes with other
		// names get other GPUs.
		h := fnv.New64a()
		h.Write([]byte(cfg.name))
		cfg.seed = h.Sum64()
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil)).With("component", "agent")
	return nodeAgent(ctx, cfg, log, e.stdout)
}

// nodeAgent runs one agent until ctx ends. The demo runs several in one
// process.
func nodeAgent(ctx context.Context, cfg agentConfig, log *slog.Logger, out io.Writer) error {
	reader, fake, what, err := openGPUs(cfg.fake, cfg.seed)
	if err != nil {
		return err
	}
	defer reader.Close()
	scfg := gpu.SamplerConfig{Interval: cfg.interval, Logger: log}
	if cfg.fake == "" {
		scfg.Owners = gpu.ProcOwners("/proc") // simulated GPUs' processes are not this host's
	}
	sampler := gpu.NewSampler(reader, scfg)
	first := sampler.Refresh(ctx)
	if first.Err != nil {
		return fmt.Errorf("reading the GPUs: %w (check the driver with nvidia-smi; --fake-gpus simulates GPUs)", first.Err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := prometheus.NewRegistry()
	var node *agent.Agent
	if cfg.server != "" {
		conn, err := joinServer(ctx, cfg, first, log)
		if err != nil {
			return err
		}
		acfg := agent.Config{Name: cfg.name, Version: version, Conn: conn, Sampler: sampler, StateDir: cfg.stateDir,
			Server: cfg.server, Logger: log, Registerer: reg, RunAsSelf: cfg.runAsSelf, MinUID: cfg.minUID, CgroupRoot: cgroupRoot(cfg.cgroupRoot)}
		if fake != nil {
			acfg.Busy = fakeBusy(fake, first.Devices)
		}
		if node, err = agent.New(acfg); err != nil {
			return err
		}
	}
	ecfg := gpu.ExporterConfig{Hostname: cfg.name}
	if node != nil {
		ecfg.Labels = node.Labels
	}
	reg.MustRegister(gpu.NewExporter(sampler, ecfg))

	var parts []func() error
	parts = append(parts, func() error { return sampler.Run(ctx) })
	metricsURL := "no metrics"
	if cfg.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return fmt.Errorf("serving metrics on %s: %w", cfg.metricsAddr, err)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		metricsURL = "metrics on http://" + ln.Addr().String() + "/metrics"
		parts = append(parts, func() error {
			go func() {
				<-ctx.Done()
				shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
				defer done()
				srv.Shutdown(shutdown)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serving metrics: %w", err)
			}
			return nil
		})
	}
	joined := ""
	if node != nil {
		joined = "; joined " + cfg.server
		parts = append(parts, func() error { return node.Run(ctx) })
	}
	fmt.Fprintf(out, "gpucal agent on %s: %d %s; %s%s\n", cfg.name, len(first.Devices), what, metricsURL, joined)

	// Every part runs until ctx ends; the first to fail stops the others.
	errc := make(chan error, len(parts))
	for _, p := range parts {
		go func() {
			err := p()
			cancel()
			errc <- err
		}()
	}
	var errs []error
	for range parts {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

// agentCredential is what a node keeps after joining, 0600 in its state
// directory.
type agentCredential struct {
	Server     string `json:"server"`
	Node       string `json:"node"`
	Credential string `json:"credential"`
}

const credentialFile = "credential.json"

// joinServer returns the agent's connection to the server, joining with
// the join token when the state directory holds no credential for this
// server and node name yet.
func joinServer(ctx context.Context, cfg agentConfig, first gpu.Sample, log *slog.Logger) (agent.Conn, error) {
	if err := os.MkdirAll(cfg.stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("making the state directory: %w", err)
	}
	path := filepath.Join(cfg.stateDir, credentialFile)
	var saved agentCredential
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &saved); err != nil {
			return nil, fmt.Errorf("reading %s: %w (remove it and join again)", path, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading the node credential: %w", err)
	}
	server := strings.TrimRight(cfg.server, "/")
	if saved.Credential != "" && saved.Server == server && saved.Node == cfg.name {
		return clientConn{&web.Client{BaseURL: server, Token: saved.Credential}}, nil
	}
	if cfg.joinToken == "" {
		return nil, usagef("this node has not joined %s yet: give --join-token (an admin makes one with `gpucal node join-token`)", server)
	}
	hb := core.Heartbeat{Node: cfg.name, Agent: version}
	for _, d := range first.Devices {
		hb.GPUs = append(hb.GPUs, core.GPUReport{Index: d.Index, UUID: d.UUID, Name: d.Name, MemoryMiB: int64(d.MemoryTotalMiB)})
	}
	c := &web.Client{BaseURL: server, Token: cfg.joinToken}
	var res web.JoinResponse
	for attempt := 0; ; attempt++ {
		var err error
		if res, err = c.Join(ctx, hb); err == nil {
			break
		}
		var api *web.APIError
		if errors.As(err, &api) || attempt >= 5 || ctx.Err() != nil {
			return nil, fmt.Errorf("joining %s as %s: %w", server, cfg.name, err)
		}
		log.Warn("cannot reach the server to join; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
	}
	b, _ := json.MarshalIndent(agentCredential{Server: server, Node: cfg.name, Credential: res.Credential}, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("saving the node credential: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("saving the node credential: %w", err)
	}
	log.Info("joined", "server", server, "node", cfg.name, "gpus", len(hb.GPUs))
	return clientConn{&web.Client{BaseURL: server, Token: res.Credential}}, nil
}

// clientConn is the agent's Conn over the HTTP API.
type clientConn struct{ c *web.Client }

func (c clientConn) Heartbeat(ctx context.Context, hb core.Heartbeat) (core.DesiredState, error) {
	return c.c.Heartbeat(ctx, hb)
}

func (c clientConn) AppendLog(ctx context.Context, job, offset int64, data []byte) (int64, error) {
	size, err := c.c.AppendLog(ctx, job, offset, data)
	var api *web.APIError
	if errors.As(err, &api) && api.Code == string(core.CodeConflict) {
		return 0, &agent.LogOffsetError{Size: api.LogSize}
	}
	return size, err
}

// fakeBusy makes simulated GPUs busy while a job's processes hold them.
func fakeBusy(f *nvmlreader.FakeReader, devices []gpu.Device) func(uuid string, pid int, busy bool) {
	index := map[string]int{}
	total := map[string]uint64{}
	for _, d := range devices {
		index[d.UUID], total[d.UUID] = d.Index, d.MemoryTotalMiB
	}
	return func(uuid string, pid int, busy bool) {
		i, ok := index[uuid]
		if !ok {
			return
		}
		if busy {
			f.SetBusy(i, pid, total[uuid]*3/5)
		} else {
			f.SetIdle(i)
		}
	}
}

// defaultAgentStateDir is /var/lib/gpucal-agent for root, else a folder in
// the user's data directory.
func defaultAgentStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/gpucal-agent"
	}
	return filepath.Join(defaultDataDir(), "agent")
}

// openGPUs returns the reader of this node's GPUs — simulated ones when
// spec names some, which are also returned as fake — and words for what
// it reads ("8 simulated GPUs").
func openGPUs(spec string, seed uint64) (gpu.Reader, *nvmlreader.FakeReader, string, error) {
	if spec != "" {
		specs, err := gpu.ParseFake(spec)
		if err != nil {
			return nil, nil, "", usagef("--fake-gpus: %v", err)
		}
		r, err := nvmlreader.Fake(specs, nvmlreader.FakeOptions{Seed: seed})
		if err != nil {
			return nil, nil, "", cgoHint(err)
		}
		return r, r, "simulated GPUs (" + gpu.FormatFake(specs) + ")", nil
	}
	r, err := nvmlreader.Open()
	if err != nil {
		return nil, nil, "", cgoHint(err)
	}
	return r, nil, "GPUs read through NVML", nil
}

// cgoHint says how to get a gpucal that can read GPUs when this one was
// built without cgo.
func cgoHint(err error) error {
	if errors.Is(err, nvmlreader.ErrNoCgo) {
		return fmt.Errorf("%w; `make build` makes one", err)
	}
	return err
}

// cgroupRoot reads --cgroup-root.
func cgroupRoot(flag string) string {
	switch flag {
	case "", "off":
		return ""
	case "auto":
		return agent.DefaultCgroupRoot()
	}
	return flag
}
