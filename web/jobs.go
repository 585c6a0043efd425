package web

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gpucal/gpucal/core"
)

// The job, queue and what-if routes.

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req SubmitRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	sub := core.SubmitRequest{GPUs: req.GPUs, Model: req.Model, Name: req.Name, Type: core.JobType(req.Type),
		Command: req.Command, Env: req.Env, WorkDir: req.WorkDir, Class: core.JobClass(req.Class),
		Preemptible: req.Preemptible, Project: req.Project, Checkpoint: req.Checkpoint}
	var err error
	if req.Reservation != "" {
		sub.Reservation, err = core.ParseReservationID(req.Reservation)
	}
	if err == nil && req.Hints != nil {
		sub.Hints, err = hintsOf(*req.Hints)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := s.svc.Submit(r.Context(), a, sub)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.changed()
	w.Header().Set("Location", "/api/v1/jobs/"+core.JobName(j.ID))
	writeJSON(w, http.StatusCreated, jobJSON(j, nil))
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	f := core.JobFilter{Owner: q.Get("user"), Project: q.Get("project")}
	if mine, _ := strconv.ParseBool(q.Get("mine")); mine {
		f.Owner = a.User
	}
	for _, st := range splitList(q.Get("state")) {
		f.States = append(f.States, core.JobState(st))
	}
	for _, t := range splitList(q.Get("type")) {
		f.Types = append(f.Types, core.JobType(t))
	}
	var err error
	if f.Limit, err = queryLimit(q); err != nil {
		s.fail(w, r, err)
		return
	}
	js, err := s.svc.Jobs(r.Context(), a, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gpus, err := s.svc.GPURefs(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]Job, 0, len(js))
	for _, j := range js {
		out = append(out, jobJSON(j, gpus))
	}
	writeJSON(w, http.StatusOK, out)
}

// jobOp is the shape of every handler that acts on one job.
func (s *Server) jobOp(w http.ResponseWriter, r *http.Request, a core.Actor, op func(ctx context.Context, id int64) (core.Job, error)) {
	id, err := core.ParseJobID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, core.Errorf(core.CodeNotFound, "%s", core.ErrorMessage(err)))
		return
	}
	j, err := op(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gpus, err := s.svc.GPURefs(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobJSON(j, gpus))
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request, a core.Actor) {
	s.jobOp(w, r, a, func(ctx context.Context, id int64) (core.Job, error) { return s.svc.Job(ctx, a, id) })
}

func (s *Server) handleCancelJob(w http.ResponseWriter, r *http.Request, a core.Actor) {
	s.jobOp(w, r, a, func(ctx context.Context, id int64) (core.Job, error) {
		j, err := s.svc.CancelJob(ctx, a, id)
		if err == nil {
			s.changed()
		}
		return j, err
	})
}

func (s *Server) handleProgress(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req ProgressRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	report, err := progressOf(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.jobOp(w, r, a, func(ctx context.Context, id int64) (core.Job, error) {
		j, err := s.svc.ReportProgress(ctx, a, id, report)
		if err == nil {
			s.changed()
		}
		return j, err
	})
}

// progressOf reads a progress report: a fraction, or a step and a total.
func progressOf(req ProgressRequest) (core.ProgressReport, error) {
	switch {
	case req.Fraction != nil && (req.Step != nil || req.Total != nil):
		return core.ProgressReport{}, core.Errorf(core.CodeInvalid, "give progress as a fraction or as a step and a total, not both")
	case req.Fraction != nil:
		return core.ProgressReport{Fraction: *req.Fraction}, nil
	case req.Step == nil || req.Total == nil:
		return core.ProgressReport{}, core.Errorf(core.CodeInvalid, `progress needs {"fraction": 0.42} or {"step": 120, "total": 1000}`)
	case *req.Total <= 0:
		return core.ProgressReport{}, core.Errorf(core.CodeInvalid, "the total number of steps must be positive, got %d", *req.Total)
	}
	return core.ProgressReport{Step: *req.Step, Total: *req.Total}, nil
}

func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q, err := s.svc.Queue(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gpus, err := s.svc.GPURefs(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := Queue{PlannedAt: q.PlannedAt, Queued: make([]Job, 0, len(q.Queued)), Running: make([]Job, 0, len(q.Running))}
	for _, j := range q.Queued {
		out.Queued = append(out.Queued, jobJSON(j, gpus))
	}
	for _, j := range q.Running {
		out.Running = append(out.Running, jobJSON(j, gpus))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleWhatIf(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req WhatIfRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	wi := core.WhatIfRequest{GPUs: req.GPUs, Model: req.Model, Class: core.JobClass(req.Class), Preemptible: req.Preemptible}
	if req.Duration != "" {
		d, err := core.ParseDuration(req.Duration)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		wi.Duration = d
	}
	ans, err := s.svc.WhatIf(r.Context(), a, wi)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := WhatIfAnswer{PlannedAt: ans.PlannedAt, Asked: whatIfJSON(ans.Asked), Alternatives: []WhatIfOption{}}
	for _, o := range ans.Alternatives {
		out.Alternatives = append(out.Alternatives, whatIfJSON(o))
	}
	writeJSON(w, http.StatusOK, out)
}

// changed tells the replan loop that something the plan depends on changed.
func (s *Server) changed() {
	if s.onChange != nil {
		s.onChange()
	}
	s.events.Publish("change")
}

// Publish tells the browsers watching the calendar that something of kind
// changed ("plan" after a replan that moved predictions); handlers publish
// their own changes.
func (s *Server) Publish(kind string) { s.events.Publish(kind) }

// hintsOf reads the wire hints; the guess is a duration like "3h".
func hintsOf(h Hints) (core.Hints, error) {
	out := core.Hints{Framework: h.Framework, Params: h.Params, Tokens: h.Tokens, Dataset: h.Dataset,
		Epochs: h.Epochs, BatchSize: h.BatchSize, Steps: h.Steps}
	if h.Guess != "" {
		d, err := core.ParseDuration(h.Guess)
		if err != nil {
			return core.Hints{}, core.Errorf(core.CodeInvalid, "hint guess: %s", core.ErrorMessage(err))
		}
		out.Guess = d
	}
	return out, nil
}

func hintsJSON(h core.Hints) *Hints {
	if h == (core.Hints{}) {
		return nil
	}
	out := &Hints{Framework: h.Framework, Params: h.Params, Tokens: h.Tokens, Dataset: h.Dataset,
		Epochs: h.Epochs, BatchSize: h.BatchSize, Steps: h.Steps}
	if h.Guess > 0 {
		out.Guess = h.Guess.String()
	}
	return out
}

// jobJSON shows j; gpus names the GPUs its prediction plans (nil: by ID only).
func jobJSON(j core.Job, gpus map[int64]core.GPURef) Job {
	out := Job{
		ID: core.JobName(j.ID), Owner: j.Owner, Project: j.Project, Name: j.Name, Type: string(j.Type), GPUs: j.GPUs,
		Model: j.Model, Command: j.Command, Env: j.Env, WorkDir: j.WorkDir, Class: string(j.Class), Preemptible: j.Preemptible,
		Hints: hintsJSON(j.Hints), State: string(j.State), SubmittedAt: j.SubmittedAt, StartedAt: j.StartedAt, EndedAt: j.EndedAt,
		Checkpoint: j.Checkpoint, Stop: j.Stop, Runs: j.Runs,
	}
	if j.Reservation != 0 {
		out.Reservation = core.ReservationName(j.Reservation)
	}
	for _, g := range j.Assigned {
		out.Assigned = append(out.Assigned, gpuRefJSON(g))
	}
	if p := j.Progress; p.Reported() {
		out.Progress = &Progress{Fraction: p.Fraction, Step: p.Step, Total: p.Total, At: p.At, Rate: p.Rate}
	}
	if p := j.Prediction; !p.PlannedAt.IsZero() {
		out.Prediction = &Prediction{PlannedAt: p.PlannedAt, Position: p.Position, StartP50: p.StartP50, StartP90: p.StartP90,
			EndP50: p.EndP50, EndP90: p.EndP90, GPUs: gpusJSON(p.GPUs, gpus), Reason: p.Reason, Estimate: estimateJSON(p.Estimate)}
		if d := p.Drain; d != nil {
			out.Prediction.Drain = &Drain{SignalAt: d.SignalAt, Deadline: d.Deadline}
			if d.Reservation != 0 {
				out.Prediction.Drain.Reservation = core.ReservationName(d.Reservation)
			}
		}
	}
	return out
}

func gpusJSON(ids []int64, gpus map[int64]core.GPURef) []GPU {
	var out []GPU
	for _, id := range ids {
		if g, ok := gpus[id]; ok {
			out = append(out, gpuRefJSON(g))
		} else {
			out = append(out, GPU{ID: id})
		}
	}
	return out
}

func estimateJSON(e core.Estimate) Estimate {
	return Estimate{P50: int64(e.P50 / time.Second), P90: int64(e.P90 / time.Second), Source: e.Source, Samples: e.Samples}
}

func whatIfJSON(o core.WhatIfOption) WhatIfOption {
	out := WhatIfOption{Kind: o.Kind, GPUs: o.GPUs, Model: o.Model, StartP50: o.StartP50, StartP90: o.StartP90,
		EndP50: o.EndP50, EndP90: o.EndP90, Assigned: []GPU{}, Reason: o.Reason, Estimate: estimateJSON(o.Estimate)}
	for _, g := range o.Assigned {
		out.Assigned = append(out.Assigned, gpuRefJSON(g))
	}
	return out
}
