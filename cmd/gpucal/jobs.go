package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/web"
)

// The job commands: submit, queue, when, jobs, job (and cancel j42).

// envFlag collects repeated --env K=V flags.
type envFlag map[string]string

func (f envFlag) String() string { return "" }

func (f envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: write it as NAME=value", v)
	}
	if _, dup := f[k]; dup {
		return fmt.Errorf("%s is set twice", k)
	}
	f[k] = val
	return nil
}

// splitCommand splits a submit command line at the first "--": flags
// before it, the job's command after it.
func splitCommand(args []string) (flags, command []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
	}
	return args, nil
}

var countRe = regexp.MustCompile(`^([0-9]*\.?[0-9]+(?:e[0-9]+)?)([kmbgt]?)$`)

// parseCount reads a large count as people write it: 7e9, 7B, 1.5T, 350M.
func parseCount(flag, s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	m := countRe.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, usagef("--%s %q: write a number like 7e9, 7B or 1.5T", flag, s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, usagef("--%s %q: write a number like 7e9, 7B or 1.5T", flag, s)
	}
	return v * map[string]float64{"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}[m[2]], nil
}

// submitFlags is what `gpucal submit` reads besides the command.
type submitFlags struct {
	cf             clientFlags
	req            web.SubmitRequest
	hints          web.Hints
	params, tokens string
	env            envFlag
}

// parseSubmit reads a submit command line.
func parseSubmit(e *env, args []string) (*submitFlags, error) {
	before, command := splitCommand(args)
	s := &submitFlags{env: envFlag{}}
	fs := newFlagSet("submit", e)
	s.cf.register(fs)
	fs.IntVar(&s.req.GPUs, "gpus", 1, "number of GPUs")
	fs.StringVar(&s.req.Model, "model", "", "GPU model: a100, h100, a100-80gb, … (default: any)")
	fs.StringVar(&s.req.Name, "name", "", "job name: past runs with the same name predict this one (default: from the command)")
	fs.StringVar(&s.req.Type, "type", "", "train, finetune, eval, inference, notebook or other (default)")
	fs.StringVar(&s.req.Class, "class", "", "high (admins and project admins), normal (default) or low (always preemptible)")
	fs.BoolVar(&s.req.Preemptible, "preemptible", false, "may be stopped, after a checkpoint signal, for a reservation")
	fs.StringVar(&s.req.Reservation, "reservation", "", "run inside this reservation of yours: r42")
	fs.StringVar(&s.req.Project, "project", "", "the project to submit for")
	fs.StringVar(&s.req.Checkpoint, "checkpoint-signal", "", "the signal that asks the job to save its state before it is stopped: SIGUSR1 (default), SIGUSR2, SIGINT, SIGTERM, …")
	fs.StringVar(&s.req.WorkDir, "workdir", "", "working directory on the node, an absolute path (default: the agent's)")
	fs.Var(s.env, "env", "environment variable NAME=value (repeatable)")
	fs.StringVar(&s.hints.Guess, "guess", "", "how long you expect it to run: 3h, 90m, 2d")
	fs.StringVar(&s.params, "params", "", "model parameters: 7e9 or 7B")
	fs.StringVar(&s.tokens, "tokens", "", "training tokens: 2e12 or 2T")
	fs.Int64Var(&s.hints.Dataset, "dataset", 0, "dataset size in samples")
	fs.Int64Var(&s.hints.Epochs, "epochs", 0, "epochs")
	fs.Int64Var(&s.hints.Steps, "steps", 0, "training steps")
	fs.Int64Var(&s.hints.BatchSize, "batch-size", 0, "batch size")
	fs.StringVar(&s.hints.Framework, "framework", "", "pytorch, jax, …")
	pos, err := parseArgs(fs, before, 0, -1)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("put the job's command after --, like: gpucal submit --gpus 4 -- %s", strings.Join(pos, " "))
	}
	if len(command) == 0 {
		return nil, usagef("give the job's command after --, like: gpucal submit --gpus 4 --model a100 -- python train.py")
	}
	if s.hints.Guess != "" {
		d, err := core.ParseDuration(s.hints.Guess)
		if err != nil {
			return nil, usageError{"--guess: " + core.ErrorMessage(err)}
		}
		s.hints.Guess = d.String()
	}
	if s.hints.Params, err = parseCount("params", s.params); err != nil {
		return nil, err
	}
	if s.hints.Tokens, err = parseCount("tokens", s.tokens); err != nil {
		return nil, err
	}
	s.req.Command = command
	if len(s.env) > 0 {
		s.req.Env = s.env
	}
	if s.hints != (web.Hints{}) {
		h := s.hints
		s.req.Hints = &h
	}
	return s, nil
}

func runSubmit(ctx context.Context, e *env, args []string) error {
	s, err := parseSubmit(e, args)
	if err != nil {
		return err
	}
	c, loc, err := s.cf.client(e)
	if err != nil {
		return err
	}
	j, err := retryWithKey(ctx, func(key string) (web.Job, error) { return c.Submit(ctx, s.req, key) })
	if err != nil || s.cf.json {
		return jsonOr(e, err, s.cf.json, j)
	}
	fmt.Fprintf(e.stdout, "Submitted %s: %s.\n", j.ID, describeJob(j))
	// The server plans it within a moment; wait briefly to say when it starts.
	for deadline := time.Now().Add(3 * time.Second); j.Prediction == nil && j.State == "queued" && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if j, err = c.Job(ctx, j.ID); err != nil {
			return err
		}
	}
	switch {
	case j.State != "queued":
		fmt.Fprintf(e.stdout, "It is %s on %s.\n", j.State, gpuList(j.Assigned))
	case j.Prediction != nil && !j.Prediction.StartP50.IsZero():
		p := j.Prediction
		fmt.Fprintf(e.stdout, "Predicted start %s (90%%: by %s), end %s; position %d.\n  %s\n",
			fmtWhen(p.StartP50, loc), fmtWhen(p.StartP90, loc), fmtWhen(p.EndP50, loc), p.Position, p.Reason)
	case j.Prediction != nil:
		fmt.Fprintf(e.stdout, "It cannot be planned yet: %s\n", j.Prediction.Reason)
	default:
		fmt.Fprintln(e.stdout, "Its predicted start comes with the next plan: gpucal queue")
	}
	if p := j.Prediction; p != nil && p.Estimate.P50 > 0 {
		fmt.Fprintf(e.stdout, "Estimated %s (90%%: %s) — %s.\n", fmtLength(time.Duration(p.Estimate.P50)*time.Second),
			fmtLength(time.Duration(p.Estimate.P90)*time.Second), p.Estimate.Source)
	}
	return nil
}

// retryWithKey sends a POST with a fresh idempotency key and retries it
// with the same key when the server cannot be reached or is unavailable:
// the key makes the retries safe.
func retryWithKey[T any](ctx context.Context, send func(key string) (T, error)) (T, error) {
	b := make([]byte, 16)
	rand.Read(b)
	key := hex.EncodeToString(b)
	var out T
	var err error
	for attempt := range 4 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		out, err = send(key)
		var apiErr *web.APIError
		retriable := err != nil && (!errors.As(err, &apiErr) || apiErr.Status == 503 ||
			(apiErr.Status == 409 && strings.Contains(apiErr.Message, "still in progress")))
		if !retriable {
			return out, err
		}
	}
	return out, err
}

func runQueue(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("queue", e)
	_, c, loc, err := cf.setup(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	q, err := c.Queue(ctx)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, q)
	}
	printQueue(e.stdout, q, loc)
	return nil
}

// whenArgs reads "8 h100 12h", "8 12h", "8 h100" or "8".
func whenArgs(pos []string) (web.WhatIfRequest, error) {
	var req web.WhatIfRequest
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 1 {
		return req, usagef("%q is not a number of GPUs; usage: gpucal when 8 h100 12h", pos[0])
	}
	req.GPUs = n
	for i, p := range pos[1:] {
		if d, err := core.ParseDuration(p); err == nil && i == len(pos)-2 {
			req.Duration = d.String()
			continue
		}
		if req.Model != "" {
			return req, usagef("%q is not a duration like 12h; usage: gpucal when 8 h100 12h", p)
		}
		req.Model = p
	}
	return req, nil
}

func runWhen(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var class string
	var preemptible bool
	fs := newFlagSet("when", e)
	cf.register(fs)
	fs.StringVar(&class, "class", "", "as if submitted with this class: high, normal or low")
	fs.BoolVar(&preemptible, "preemptible", false, "as if submitted preemptible")
	pos, err := parseArgs(fs, args, 1, 3)
	if err != nil {
		return err
	}
	req, err := whenArgs(pos)
	if err != nil {
		return err
	}
	req.Class, req.Preemptible = class, preemptible
	c, loc, err := cf.client(e)
	if err != nil {
		return err
	}
	ans, err := c.WhatIf(ctx, req)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, ans)
	}
	printWhatIf(e.stdout, req, ans, loc)
	return nil
}

func runJobs(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	var q web.JobQuery
	var states, types string
	var all bool
	fs := newFlagSet("jobs", e)
	cf.register(fs)
	fs.BoolVar(&q.Mine, "mine", false, "only my jobs")
	fs.StringVar(&q.User, "user", "", "only this user's")
	fs.StringVar(&q.Project, "project", "", "only this project's")
	fs.StringVar(&states, "state", "", "only these states, comma-separated: queued, starting, running, draining, succeeded, failed, preempted, cancelled")
	fs.StringVar(&types, "type", "", "only these types, comma-separated: train, finetune, eval, inference, notebook, other")
	fs.BoolVar(&all, "all", false, "include finished jobs (default: queued and running ones)")
	fs.IntVar(&q.Limit, "limit", 100, "how many, newest first")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	q.States, q.Types = splitComma(states), splitComma(types)
	if len(q.States) == 0 && !all {
		q.States = []string{"queued", "starting", "running", "draining"}
	}
	c, loc, err := cf.client(e)
	if err != nil {
		return err
	}
	js, err := c.Jobs(ctx, q)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, js)
	}
	printJobs(e.stdout, js, loc)
	return nil
}

func runJob(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("job", e)
	pos, c, loc, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	j, err := c.Job(ctx, pos[0])
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, j)
	}
	printJob(e.stdout, j, loc)
	return nil
}

func runProgress(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("progress", e)
	pos, c, loc, err := cf.setup(e, fs, args, 2, 2)
	if err != nil {
		return err
	}
	req, err := parseProgress(pos[1])
	if err != nil {
		return err
	}
	j, err := c.ReportProgress(ctx, pos[0], req)
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, j)
	}
	if j.Progress == nil {
		return fmt.Errorf("the server took the report but did not return %s's progress; is it older than this client?", j.ID)
	}
	fmt.Fprintf(e.stdout, "Recorded: %s is %s.\n", j.ID, progressText(*j.Progress))
	if p := j.Prediction; p != nil && !p.EndP50.IsZero() {
		fmt.Fprintf(e.stdout, "The next plan recomputes its end (last predicted %s).\n", fmtWhen(p.EndP50, loc))
	}
	return nil
}

// parseProgress reads a progress report as a user types it: a fraction
// ("0.42"), a percentage ("42%") or steps ("120/1000").
func parseProgress(s string) (web.ProgressRequest, error) {
	bad := fmt.Errorf("progress %q: give a fraction (0.42), a percentage (42%%) or steps (120/1000)", s)
	if step, total, ok := strings.Cut(s, "/"); ok {
		a, err1 := strconv.ParseInt(strings.TrimSpace(step), 10, 64)
		b, err2 := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
		if err1 != nil || err2 != nil {
			return web.ProgressRequest{}, bad
		}
		return web.ProgressRequest{Step: &a, Total: &b}, nil
	}
	t, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return web.ProgressRequest{}, bad
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return web.ProgressRequest{}, fmt.Errorf("progress %q: a job is between 0 and 100%% done (a fraction 0 to 1)", s)
	}
	return web.ProgressRequest{Fraction: &f}, nil
}

// progressText is a job's progress in words: "42% done (120 of 1000 steps,
// 1.9 steps/s), reported 14:02".
func progressText(p web.Progress) string {
	s := fmt.Sprintf("%d%% done", int(math.Floor(100*p.Fraction)))
	if p.Total > 0 {
		s += fmt.Sprintf(" (%d of %d steps", p.Step, p.Total)
		if p.Rate > 0 {
			s += fmt.Sprintf(", %.2g steps/s", p.Rate*float64(p.Total))
		}
		s += ")"
	}
	return s
}

var jobID = regexp.MustCompile(`^[jJ][0-9]+$`)

// cancelsJob reports whether a cancel command line names a job ("j42")
// rather than a reservation.
func cancelsJob(args []string) bool {
	for _, a := range args {
		if jobID.MatchString(a) {
			return true
		}
	}
	return false
}

func runCancelJob(ctx context.Context, e *env, args []string) error {
	var cf clientFlags
	fs := newFlagSet("cancel", e)
	pos, c, _, err := cf.setup(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	j, err := c.CancelJob(ctx, pos[0])
	if err != nil || cf.json {
		return jsonOr(e, err, cf.json, j)
	}
	fmt.Fprintf(e.stdout, "Cancelled %s (now %s): %s.\n", j.ID, j.State, describeJob(j))
	return nil
}

// describeJob is the one-line summary used after a change.
func describeJob(j web.Job) string {
	model := j.Model
	if model == "" {
		model = "any"
	}
	s := fmt.Sprintf("%d×%s %s %s, class %s", j.GPUs, model, j.Type, j.Name, j.Class)
	if j.Preemptible && j.Class != "low" {
		s += ", preemptible"
	}
	if j.Reservation != "" {
		s += " in " + j.Reservation
	}
	s += ", for " + j.Owner
	if j.Project != "" {
		s += " (" + j.Project + ")"
	}
	return s
}

func printQueue(w io.Writer, q web.Queue, loc *time.Location) {
	if len(q.Queued) == 0 && len(q.Running) == 0 {
		fmt.Fprintln(w, "The queue is empty and no job is running.")
		return
	}
	if !q.PlannedAt.IsZero() {
		fmt.Fprintf(w, "Planned at %s.\n\n", fmtWhen(q.PlannedAt, loc))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(q.Queued) == 0 {
		fmt.Fprintln(w, "Nothing is waiting.")
	} else {
		fmt.Fprintln(tw, "POS\tJOB\tOWNER\tTYPE\tGPUS\tSTART P50\tSTART P90\tEND P50\tON\tWHY IT WAITS")
		for _, j := range q.Queued {
			p := j.Prediction
			if p == nil {
				fmt.Fprintf(tw, "-\t%s\t%s\t%s\t%s\t-\t-\t-\t-\tnot planned yet\n", j.ID, j.Owner, j.Type, jobGPUs(j))
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Position, j.ID, j.Owner, j.Type, jobGPUs(j),
				shortWhen(p.StartP50, loc), shortWhen(p.StartP90, loc), shortWhen(p.EndP50, loc), dash(gpuList(p.GPUs)), p.Reason)
		}
	}
	tw.Flush()
	if len(q.Running) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRunning:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tOWNER\tTYPE\tSTATE\tGPUS\tSTARTED\tEND P50\tEND P90\tON")
	for _, j := range q.Running {
		end50, end90 := "-", "-"
		if p := j.Prediction; p != nil {
			end50, end90 = shortWhen(p.EndP50, loc), shortWhen(p.EndP90, loc)
			if p.Drain != nil {
				end50 += " (drained by " + shortWhen(p.Drain.Deadline, loc) + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Owner, j.Type, j.State, jobGPUs(j),
			shortWhen(j.StartedAt, loc), end50, end90, gpuList(j.Assigned))
	}
	tw.Flush()
}

func printWhatIf(w io.Writer, req web.WhatIfRequest, ans web.WhatIfAnswer, loc *time.Location) {
	a := ans.Asked
	what := fmt.Sprintf("%d×%s", a.GPUs, dash(a.Model))
	if req.Duration != "" {
		d, _ := time.ParseDuration(req.Duration)
		what += " for " + fmtLength(d)
	}
	if a.StartP50.IsZero() {
		fmt.Fprintf(w, "%s cannot be planned: %s\n", what, a.Reason)
	} else {
		fmt.Fprintf(w, "%s could start %s (90%%: by %s) and end about %s (90%%: by %s) on %s.\n",
			what, fmtWhen(a.StartP50, loc), fmtWhen(a.StartP90, loc), fmtWhen(a.EndP50, loc), fmtWhen(a.EndP90, loc), gpuList(a.Assigned))
		if !strings.HasPrefix(a.Reason, "it would start now") {
			fmt.Fprintf(w, "  Why not sooner: %s\n", a.Reason)
		}
	}
	if len(ans.Alternatives) > 0 {
		fmt.Fprintln(w, "\nAlternatives:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, o := range ans.Alternatives {
			if o.StartP50.IsZero() {
				fmt.Fprintf(tw, "  %d×%s\tcannot be planned: %s\n", o.GPUs, dash(o.Model), o.Reason)
				continue
			}
			fmt.Fprintf(tw, "  %d×%s\tstart %s\t(90%%: %s)\tend %s\ton %s\n", o.GPUs, dash(o.Model),
				shortWhen(o.StartP50, loc), shortWhen(o.StartP90, loc), shortWhen(o.EndP50, loc), gpuList(o.Assigned))
		}
		tw.Flush()
	}
	cmd := fmt.Sprintf("gpucal submit --gpus %d", req.GPUs)
	if req.Model != "" {
		cmd += " --model " + req.Model
	}
	if req.Duration != "" {
		d, _ := time.ParseDuration(req.Duration)
		cmd += " --guess " + fmtLength(d)
	}
	fmt.Fprintf(w, "\nNothing was changed. To queue it: %s -- COMMAND\n", cmd)
}

func printJobs(w io.Writer, js []web.Job, loc *time.Location) {
	if len(js) == 0 {
		fmt.Fprintln(w, "No jobs.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tOWNER\tPROJECT\tTYPE\tSTATE\tGPUS\tCLASS\tSUBMITTED\tNAME")
	for _, j := range js {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Owner, dash(j.Project), j.Type, j.State, jobGPUs(j),
			j.Class, shortWhen(j.SubmittedAt, loc), truncate(j.Name, 40))
	}
	tw.Flush()
}

func printJob(w io.Writer, j web.Job, loc *time.Location) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Job\t%s (%s)\n", j.ID, j.Name)
	fmt.Fprintf(tw, "State\t%s\n", j.State)
	fmt.Fprintf(tw, "Owner\t%s\n", j.Owner)
	if j.Project != "" {
		fmt.Fprintf(tw, "Project\t%s\n", j.Project)
	}
	fmt.Fprintf(tw, "Type\t%s, class %s, preemptible %t\n", j.Type, j.Class, j.Preemptible)
	if j.Reservation != "" {
		fmt.Fprintf(tw, "Reservation\t%s\n", j.Reservation)
	}
	fmt.Fprintf(tw, "GPUs\t%s\n", jobGPUs(j))
	if j.Command != nil {
		fmt.Fprintf(tw, "Command\t%s\n", strings.Join(j.Command, " "))
	}
	if j.WorkDir != "" {
		fmt.Fprintf(tw, "Working dir\t%s\n", j.WorkDir)
	}
	for _, k := range sortedKeys(j.Env) {
		fmt.Fprintf(tw, "Env\t%s=%s\n", k, j.Env[k])
	}
	if h := j.Hints; h != nil {
		fmt.Fprintf(tw, "Hints\t%s\n", hintsText(*h))
	}
	fmt.Fprintf(tw, "Submitted\t%s\n", fmtWhen(j.SubmittedAt, loc))
	if !j.StartedAt.IsZero() {
		fmt.Fprintf(tw, "Started\t%s on %s\n", fmtWhen(j.StartedAt, loc), gpuList(j.Assigned))
	}
	if !j.EndedAt.IsZero() {
		fmt.Fprintf(tw, "Ended\t%s\n", fmtWhen(j.EndedAt, loc))
	}
	if p := j.Progress; p != nil {
		fmt.Fprintf(tw, "Progress\t%s, reported %s\n", progressText(*p), fmtWhen(p.At, loc))
	}
	if st := j.Stop; st != nil && j.EndedAt.IsZero() {
		fmt.Fprintf(tw, "Stopping\t%s: all its processes gone by %s\n", st.Reason, fmtWhen(st.Deadline, loc))
	}
	for _, r := range j.Runs {
		fmt.Fprintf(tw, "On %s\t%s\n", r.Node, runText(r))
	}
	if p := j.Prediction; p != nil && (j.State == "queued" || !j.StartedAt.IsZero() && j.EndedAt.IsZero()) {
		if j.State == "queued" {
			fmt.Fprintf(tw, "Position\t%d\n", p.Position)
			if !p.StartP50.IsZero() {
				fmt.Fprintf(tw, "Predicted start\t%s (90%%: by %s) on %s\n", fmtWhen(p.StartP50, loc), fmtWhen(p.StartP90, loc), gpuList(p.GPUs))
			}
			fmt.Fprintf(tw, "Why it waits\t%s\n", p.Reason)
		}
		if !p.EndP50.IsZero() {
			fmt.Fprintf(tw, "Predicted end\t%s (90%%: by %s)\n", fmtWhen(p.EndP50, loc), fmtWhen(p.EndP90, loc))
		}
		fmt.Fprintf(tw, "Estimate\t%s (90%%: %s), from %s\n", fmtLength(time.Duration(p.Estimate.P50)*time.Second),
			fmtLength(time.Duration(p.Estimate.P90)*time.Second), p.Estimate.Source)
		if d := p.Drain; d != nil {
			fmt.Fprintf(tw, "Drain\tfor %s: checkpoint signal %s, stopped by %s\n", d.Reservation, fmtWhen(d.SignalAt, loc), fmtWhen(d.Deadline, loc))
		}
	}
	tw.Flush()
}

func hintsText(h web.Hints) string {
	var parts []string
	add := func(name string, v any, set bool) {
		if set {
			parts = append(parts, fmt.Sprintf("%s %v", name, v))
		}
	}
	guess := h.Guess
	if d, err := time.ParseDuration(guess); err == nil {
		guess = fmtLength(d)
	}
	add("guess", guess, h.Guess != "")
	add("params", h.Params, h.Params != 0)
	add("tokens", h.Tokens, h.Tokens != 0)
	add("dataset", h.Dataset, h.Dataset != 0)
	add("epochs", h.Epochs, h.Epochs != 0)
	add("steps", h.Steps, h.Steps != 0)
	add("batch size", h.BatchSize, h.BatchSize != 0)
	add("framework", h.Framework, h.Framework != "")
	return strings.Join(parts, ", ")
}

// jobGPUs is "4×a100" (or "4×any").
func jobGPUs(j web.Job) string {
	if j.Model == "" {
		return fmt.Sprintf("%d×any", j.GPUs)
	}
	return fmt.Sprintf("%d×%s", j.GPUs, j.Model)
}

// shortWhen formats an instant for a table: "Mon 7 Jan 13:00", or "-".
func shortWhen(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("Mon 2 Jan 15:04")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// runText says what a job's part on one node is doing or how it ended.
func runText(r core.NodeRun) string {
	var parts []string
	switch r.State {
	case core.RunRefused:
		return "could not start: " + r.Error
	case core.RunExited:
		switch {
		case r.Signal != "":
			parts = append(parts, "ended by "+r.Signal)
		case r.ExitCode >= 0:
			parts = append(parts, fmt.Sprintf("exited with %d", r.ExitCode))
		default:
			parts = append(parts, "ended")
		}
	default:
		parts = append(parts, fmt.Sprintf("%s as process %d", r.State, r.PID))
	}
	if r.Stopped != "" {
		parts = append(parts, "stopped: "+r.Stopped)
	}
	if r.Margin != nil {
		parts = append(parts, fmt.Sprintf("all processes gone %s before the deadline", r.Margin.Round(time.Millisecond)))
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	if r.CPUSeconds > 0 || r.GPUUtil > 0 {
		parts = append(parts, fmt.Sprintf("CPU %s, peak memory %s, GPUs %.0f%% busy on average, peak %s",
			time.Duration(r.CPUSeconds*float64(time.Second)).Round(10*time.Millisecond), fmtBytes(r.MaxRSS), r.GPUUtil, fmtMemory(r.GPUMemMiB)))
	}
	return strings.Join(parts, "; ")
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}
