package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpucal/gpucal/sim"
)

// runEval measures gpucal against real traces: eval estimate --trace FILE.
func runEval(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "estimate" {
		return usagef("say what to evaluate: gpucal eval estimate --trace FILE --format philly|swf|helios")
	}
	return runEvalEstimate(ctx, e, args[1:])
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
