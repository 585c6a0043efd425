package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/sim"
)

// runSim replays a job trace through the planner (and the policies it is
// measured against) on a virtual clock: gpucal sim --trace FILE --format F.
func runSim(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("sim", e)
	trace := fs.String("trace", "", "the trace file; a name ending in .xz is read through the xz program")
	format := fs.String("format", "", "trace format: philly, swf or helios (default: swf for *.swf, else required)")
	nodes := fs.Int("nodes", 0, "nodes in the simulated cluster (default: 256, or an SWF trace's MaxProcs)")
	gpn := fs.Int("gpus-per-node", 0, "GPUs per node (default: 8, or 1 for an SWF trace, whose processors play the GPUs)")
	policy := fs.String("policy", string(sim.PolicyGPUCal), "fifo, sjf-oracle, easy or gpucal")
	compare := fs.Bool("compare", false, "replay under every policy and print one table")
	rate := fs.Float64("reservations", 0, "synthetic bookings of whole nodes per day of trace, booked 2-12 h ahead (0: none)")
	preemptible := fs.Float64("preemptible", 0, "share of jobs marked preemptible, 0 to 1")
	limit := fs.Int("limit", 0, "replay only the first N jobs (0: all)")
	seed := fs.Int64("seed", 1, "seed for the bookings and the preemptible marks")
	protect := fs.Int("protect", 0, "gpucal: how many jobs at the head of the queue keep their planned starts (0: all, conservative backfill; 1: like EASY)")
	protectShared := fs.Int("protect-shared", core.DefaultPlanConfig.ProtectShared, "gpucal: keep the planned starts of the first N queued jobs that need several GPUs of one node clear of later jobs' P90 runs (0: none)")
	hold := fs.Float64("hold", core.DefaultPlanConfig.Hold, "gpucal: how long running jobs hold their GPUs when the queue is placed, from their median end (0) to their P90 end (1), in log space")
	sharedHead := fs.Bool("shared-head", false, "gpucal: place the first job that needs several GPUs of one node before the rest of the queue")
	estimator := fs.String("estimator", sim.EstimatorRequest, "runtime estimator every policy learns with: request (the request scaled by the user's habit) or history (core.History, the server's)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the replays (not the trace's loading) to this file, for go tool pprof")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: gpucal sim --trace FILE [--format philly|swf|helios] [--policy P | --compare] [flags]\n\n"+
			"Replays a job trace on a virtual clock and reports waits, completion times, utilisation and,\n"+
			"for easy and gpucal, how well starts were predicted at submission.\n\nFlags:")
		fs.PrintDefaults()
	}
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	f, err := traceFormat(*trace, *format)
	if err != nil {
		return err
	}
	policies := []sim.Policy{sim.Policy(*policy)}
	if *compare {
		policies = sim.Policies
	} else if !slices.Contains(sim.Policies, policies[0]) {
		return usagef("unknown policy %q; use fifo, sjf-oracle, easy or gpucal", *policy)
	}
	tr, err := loadTrace(ctx, *trace, f)
	if err != nil {
		return err
	}
	cfg := sim.Config{Nodes: *nodes, GPUsPerNode: *gpn, Reservations: *rate, Preemptible: *preemptible, Limit: *limit, Seed: *seed,
		Estimator: *estimator}
	if *protect < 0 {
		return usagef("--protect must be 0 (every job) or more")
	}
	if *hold < 0 || *hold > 1 {
		return usagef("--hold must be between 0 (the median end) and 1 (the P90 end)")
	}
	if *protectShared < 0 {
		return usagef("--protect-shared must be 0 (none) or more")
	}
	cfg.Plan = core.DefaultPlanConfig
	cfg.Plan.Protect = *protect
	cfg.Plan.ProtectShared, cfg.Plan.SharedHead, cfg.Plan.Hold = *protectShared, *sharedHead, *hold
	if cfg.GPUsPerNode == 0 {
		cfg.GPUsPerNode = 8
		if f == sim.FormatSWF {
			cfg.GPUsPerNode = 1
		}
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 256
		if f == sim.FormatSWF && tr.MaxProcs > 0 {
			cfg.Nodes = (tr.MaxProcs + cfg.GPUsPerNode - 1) / cfg.GPUsPerNode
		}
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var results []sim.Result
	for _, p := range policies {
		cfg.Policy = p
		r, err := sim.Run(ctx, tr, cfg)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if *compare {
			return enc.Encode(results)
		}
		return enc.Encode(results[0])
	}
	fmt.Fprintf(e.stdout, "%s: %d jobs replayed on %d nodes × %d GPUs with the %s estimator; %d larger than the cluster dropped, %d unusable records skipped\n\n",
		*trace, results[0].Jobs, cfg.Nodes, cfg.GPUsPerNode, results[0].Estimator, results[0].Dropped, tr.Skipped)
	return sim.WriteTable(e.stdout, results)
}

// startCPUProfile profiles the CPU into path until the returned function
// is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// loadTrace reads a trace file, through `xz -dc` when its name ends in .xz
// (streamed, not held in memory).
func loadTrace(ctx context.Context, path string, f sim.Format) (sim.Trace, error) {
	r, err := openTrace(ctx, path)
	if err != nil {
		return sim.Trace{}, err
	}
	tr, loadErr := sim.Load(r, f)
	if closeErr := r.Close(); loadErr == nil && closeErr != nil {
		return sim.Trace{}, closeErr
	}
	if loadErr != nil {
		return sim.Trace{}, fmt.Errorf("%s: %w", path, loadErr)
	}
	return tr, nil
}

// openTrace opens a trace file for reading, through `xz -dc` when its name
// ends in .xz. Closing it waits for xz and reports how xz ended.
func openTrace(ctx context.Context, path string) (io.ReadCloser, error) {
	if !strings.HasSuffix(path, ".xz") {
		return os.Open(path)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	xz, err := exec.LookPath("xz")
	if err != nil {
		return nil, fmt.Errorf("%s is xz-compressed and the xz program is not installed: install xz (the xz-utils package) or decompress the file first", path)
	}
	cmd := exec.CommandContext(ctx, xz, "-dc", path)
	x := &xzReader{cmd: cmd, path: path}
	cmd.Stderr = &x.stderr
	if x.out, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("running xz: %w", err)
	}
	return x, nil
}

// xzReader is the output of a running `xz -dc`.
type xzReader struct {
	cmd    *exec.Cmd
	path   string
	out    io.ReadCloser
	stderr bytes.Buffer
}

func (x *xzReader) Read(p []byte) (int, error) { return x.out.Read(p) }

// Close lets xz finish writing, waits for it and reports its failure.
func (x *xzReader) Close() error {
	_, _ = io.Copy(io.Discard, x.out)
	if err := x.cmd.Wait(); err != nil {
		return fmt.Errorf("xz -dc %s: %w: %s", x.path, err, strings.TrimSpace(x.stderr.String()))
	}
	return nil
}

// traceFormat checks the --trace and --format flags of the commands that
// read traces: the format named, or swf for a *.swf file.
func traceFormat(trace, format string) (sim.Format, error) {
	if trace == "" {
		return "", usagef("give the trace with --trace FILE")
	}
	f := sim.Format(format)
	if f == "" {
		if !strings.HasSuffix(strings.TrimSuffix(trace, ".xz"), ".swf") {
			return "", usagef("give the trace format with --format philly, swf or helios")
		}
		f = sim.FormatSWF
	}
	if !slices.Contains(sim.Formats, f) {
		return "", usagef("unknown trace format %q; use philly, swf or helios", f)
	}
	return f, nil
}
