package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/gpu/nvmlreader"
)

// runAgent runs the node agent. What exists of it so far (issue 5): it
// reads the node's GPUs through NVML, or simulates them, and serves their
// metrics under NVIDIA DCGM exporter's names for Prometheus. Joining a
// server, running jobs and keeping reserved windows free come next.
func runAgent(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("agent", e)
	fake := fs.String("fake-gpus", "", "simulate GPUs instead of reading them: 8xH100, 2xA100-80GB, or a comma list")
	addr := fs.String("metrics-addr", ":9400", "address Prometheus scrapes the GPU metrics on (/metrics)")
	interval := fs.Duration("interval", gpu.DefaultSampleInterval, "how often the GPUs are read")
	name := fs.String("name", "", "this node's name, the metrics' Hostname label (default: the host name)")
	seed := fs.Uint64("seed", 1, "with --fake-gpus: seed of the simulated readings")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: gpucal agent [--fake-gpus 8xH100] [--metrics-addr :9400] [--name NODE] [--interval 5s]\n\n"+
			"Reads this node's GPUs through NVML (or simulates them) and serves their utilisation, memory,\n"+
			"temperature, power, energy and clocks under NVIDIA DCGM exporter's metric names, so existing\n"+
			"GPU dashboards work. Joining a gpucal server and running its jobs is not built yet (issue 5).\n\nFlags:")
		fs.PrintDefaults()
	}
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if *interval < 100*time.Millisecond {
		return usagef("--interval must be at least 100ms, not %s", *interval)
	}
	host := *name
	if host == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("the host name is unknown (%v); name this node with --name", err)
		}
		host = h
	}
	reader, what, err := openGPUs(*fake, *seed)
	if err != nil {
		return err
	}
	defer reader.Close()

	log := slog.New(slog.NewTextHandler(e.stderr, nil)).With("component", "agent")
	cfg := gpu.SamplerConfig{Interval: *interval, Logger: log}
	if *fake == "" {
		cfg.Owners = gpu.ProcOwners("/proc") // simulated GPUs' processes are not this host's
	}
	sampler := gpu.NewSampler(reader, cfg)
	first := sampler.Refresh(ctx)
	if first.Err != nil {
		return fmt.Errorf("reading the GPUs: %w (check the driver with nvidia-smi; --fake-gpus simulates GPUs)", first.Err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(gpu.NewExporter(sampler, gpu.ExporterConfig{Hostname: host}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serving metrics on %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stdout, "gpucal agent on %s: %d %s; metrics on http://%s/metrics\n", host, len(first.Devices), what, ln.Addr())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sampled := make(chan error, 1)
	go func() { sampled <- sampler.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err = srv.Shutdown(shutdown); err != nil {
			err = fmt.Errorf("stopping the metrics server: %w", err)
		}
	case err = <-served:
		err = fmt.Errorf("serving metrics: %w", err)
	}
	cancel()
	<-sampled // the reader is closed only once the sampler is done with it
	return err
}

// openGPUs returns the reader of this node's GPUs — simulated ones when
// spec names some — and words for what it reads ("8 simulated GPUs").
func openGPUs(spec string, seed uint64) (gpu.Reader, string, error) {
	if spec != "" {
		specs, err := gpu.ParseFake(spec)
		if err != nil {
			return nil, "", usagef("--fake-gpus: %v", err)
		}
		r, err := nvmlreader.Fake(specs, nvmlreader.FakeOptions{Seed: seed})
		if err != nil {
			return nil, "", cgoHint(err)
		}
		return r, "simulated GPUs (" + gpu.FormatFake(specs) + ")", nil
	}
	r, err := nvmlreader.Open()
	if err != nil {
		return nil, "", cgoHint(err)
	}
	return r, "GPUs read through NVML", nil
}

// cgoHint says how to get a gpucal that can read GPUs when this one was
// built without cgo.
func cgoHint(err error) error {
	if errors.Is(err, nvmlreader.ErrNoCgo) {
		return fmt.Errorf("%w; `make build` makes one", err)
	}
	return err
}
