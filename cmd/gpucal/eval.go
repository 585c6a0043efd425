package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpucal/gpucal/sim"
)

// runEval measures gpucal against real traces: eval estimate (runtimes at
// submission) or eval progress (remaining time from live progress).
func runEval(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "estimate":
			return runEvalEstimate(ctx, e, args[1:])
		case "progress":
			return runEvalProgress(ctx, e, args[1:])
		}
	}
	return usagef("say what to evaluate:\n" +
		"  gpucal eval estimate --trace FILE --format philly|swf|helios   runtime estimates at submission\n" +
		"  gpucal eval progress --trace FILE|DIR                          remaining time from live progress")
}

// runEvalEstimate replays a trace in time order and scores the runtime
// estimator against the baselines.
func runEvalEstimate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("eval estimate", e)
	trace := fs.String("trace", "", "the trace file; a name ending in .xz is read through the xz program")
	format := fs.String("format", "", "trace format: philly, swf or helios (default: swf for *.swf, else required)")
	limit := fs.Int("limit", 0, "evaluate only the first N jobs (0: all)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: gpucal eval estimate --trace FILE [--format philly|swf|helios] [--limit N] [--json]\n\n"+
			"Replays a trace in time order: each job's runtime is estimated at its submission from the jobs\n"+
			"finished by then, and scored against what it really ran, next to simple baselines.\n\nFlags:")
		fs.PrintDefaults()
	}
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	f, err := traceFormat(*trace, *format)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must be 0 (all jobs) or more")
	}
	data, err := readTrace(ctx, *trace)
	if err != nil {
		return err
	}
	tr, err := sim.Load(bytes.NewReader(data), f)
	if err != nil {
		return fmt.Errorf("%s: %w", *trace, err)
	}
	cfg := sim.EvalConfig{Limit: *limit}
	if f == sim.FormatSWF {
		if cfg.Waits, err = sim.ReadSWFWaits(bytes.NewReader(data)); err != nil {
			return fmt.Errorf("%s: %w", *trace, err)
		}
	}
	ev := sim.Evaluate(tr, cfg)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ev)
	}
	started := "each job started when the trace says it did"
	if cfg.Waits == nil {
		started = "the trace has no start times, so each job counts as started at its submission"
	}
	fmt.Fprintf(e.stdout, "%s: %d jobs estimated in time order, %d unusable records skipped; %s\n\n",
		*trace, ev.N, tr.Skipped, started)
	return sim.WriteEvalTable(e.stdout, ev)
}

// readTrace reads a whole trace file (see openTrace). Evaluation reads it
// twice (the jobs, and for SWF their waits), so it keeps the bytes.
func readTrace(ctx context.Context, path string) ([]byte, error) {
	r, err := openTrace(ctx, path)
	if err != nil {
		return nil, err
	}
	data, readErr := io.ReadAll(r)
	if err := r.Close(); err != nil {
		return nil, err
	}
	return data, readErr
}

// runEvalProgress replays PAI mini-batch timings and scores the remaining
// time predicted from live progress reports against simple baselines.
func runEvalProgress(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("eval progress", e)
	var traces pathList
	fs.Var(&traces, "trace", "a mini-batch job file, or a directory of them (its job_*_norm.csv[.xz]): its `path`; repeat for more")
	every := fs.Int64("every", 1, "the job reports its progress after every `N` iterations")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: gpucal eval progress --trace FILE|DIR [--trace FILE|DIR ...] [--every N] [--json]\n\n"+
			"Replays the mini-batch timings of distributed training jobs (the Alibaba PAI 2020 job_N_norm.csv\n"+
			"files; .xz ones are read through the xz program) on a virtual clock. The job reports its step\n"+
			"after every N iterations; at 5 %, 10 %, ... 95 % of the steps the remaining time is predicted\n"+
			"from the reports, by gpucal's progress rate and by simple baselines, and compared with the\n"+
			"truth. An iteration lasts as long as its slowest worker. The PAI files log every tenth\n"+
			"iteration; each logged time stands for the unlogged ones before it. A directory stands for\n"+
			"the job_*_norm.csv and job_*_norm.csv.xz files in it.\n\nFlags:")
		fs.PrintDefaults()
	}
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if len(traces) == 0 {
		return usagef("say which jobs to replay: --trace FILE or --trace DIR (a directory of job_*_norm.csv[.xz] files)")
	}
	if *every < 1 {
		return usagef("--every must be 1 or more iterations")
	}
	paths, err := jobFiles(traces)
	if err != nil {
		return err
	}
	var jobs []sim.MiniBatchJob
	for _, path := range paths {
		job, err := loadMiniBatch(ctx, path)
		if err != nil {
			return err
		}
		jobs = append(jobs, job)
	}
	ev := sim.EvaluateProgress(jobs, sim.ProgressConfig{Every: *every})
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ev)
	}
	for _, j := range ev.Jobs {
		fmt.Fprintf(e.stdout, "%s: %d iterations on %d workers (%d logged by only some of them)\n",
			j.Name, j.Iterations, j.Workers, j.Partial)
	}
	fmt.Fprintf(e.stdout, "progress reported after every %d iteration(s); an iteration takes as long as its slowest worker\n\n", ev.Every)
	return sim.WriteProgressTable(e.stdout, ev)
}

// pathList is a flag that may be given more than once.
type pathList []string

func (l *pathList) String() string { return strings.Join(*l, ",") }

func (l *pathList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// jobFiles expands each directory among paths into the mini-batch job
// files in it, in name order; files stay as they are.
func jobFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		for _, pattern := range []string{"job_*_norm.csv", "job_*_norm.csv.xz"} {
			m, err := filepath.Glob(filepath.Join(p, pattern))
			if err != nil {
				return nil, err
			}
			found = append(found, m...)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s has no mini-batch job files (job_*_norm.csv or job_*_norm.csv.xz)", p)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// loadMiniBatch reads one mini-batch job file (see openTrace), named after
// the file.
func loadMiniBatch(ctx context.Context, path string) (sim.MiniBatchJob, error) {
	r, err := openTrace(ctx, path)
	if err != nil {
		return sim.MiniBatchJob{}, err
	}
	job, loadErr := sim.LoadMiniBatch(r)
	if closeErr := r.Close(); loadErr == nil && closeErr != nil {
		return sim.MiniBatchJob{}, closeErr
	}
	if loadErr != nil {
		return sim.MiniBatchJob{}, fmt.Errorf("%s: %w", path, loadErr)
	}
	job.Name = filepath.Base(path)
	return job, nil
}
