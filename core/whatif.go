package core

import (
	"context"
	"time"
)

// WhatIfRequest asks when a job of this shape would start if it were
// submitted now.
type WhatIfRequest struct {
	GPUs        int
	Model       string        // "" for any
	Duration    time.Duration // 0: the estimator's default
	Class       JobClass      // "" for normal; high, normal or low
	Preemptible bool
}

// WhatIfOption is one answer: when a job of this shape would start and
// end (median and 90th percentile), on which GPUs, and why not sooner.
type WhatIfOption struct {
	Kind     string // "asked"; "fewer": fewer GPUs; "model": another model
	GPUs     int
	Model    string
	StartP50 time.Time
	StartP90 time.Time
	EndP50   time.Time
	EndP90   time.Time
	Assigned []GPURef // nil when it cannot be planned
	Reason   string
	Estimate Estimate
}

// WhatIfAnswer is the answer to a WhatIfRequest and its alternatives:
// half the GPUs, then one, and the same request on each other model here.
type WhatIfAnswer struct {
	PlannedAt    time.Time
	Asked        WhatIfOption
	Alternatives []WhatIfOption
}

// WhatIf plans a probe job of req's shape as if a submitted it now, and the
// alternatives, from one snapshot. It changes nothing (DESIGN §5).
func (s *Service) WhatIf(ctx context.Context, a Actor, req WhatIfRequest) (WhatIfAnswer, error) {
	now := s.Now()
	model, ok := ParseModel(req.Model)
	switch {
	case !ok:
		return WhatIfAnswer{}, Errorf(CodeInvalid, "%q is not a GPU model; try a100, h100 or a100-80gb", req.Model)
	case req.GPUs < 1:
		return WhatIfAnswer{}, Errorf(CodeInvalid, "a job needs at least 1 GPU, got %d", req.GPUs)
	case req.Duration < 0:
		return WhatIfAnswer{}, Errorf(CodeInvalid, "the duration must not be negative")
	case req.Duration > s.policy.MaxDuration:
		return WhatIfAnswer{}, Errorf(CodeInvalid, "the duration %s is longer than the longest allowed, %s", fmtDuration(req.Duration), fmtDuration(s.policy.MaxDuration))
	}
	class := req.Class
	switch class {
	case "":
		class = ClassNormal
	case ClassHigh, ClassNormal, ClassLow:
	default:
		return WhatIfAnswer{}, Errorf(CodeInvalid, "class %q must be high, normal or low", class)
	}
	snap, err := s.snapshot(ctx, now)
	if err != nil {
		return WhatIfAnswer{}, err
	}
	if err := checkDemand(snap.Nodes, demand{count: req.GPUs, model: model}); err != nil {
		return WhatIfAnswer{}, err
	}
	refs := map[int64]GPURef{}
	for _, g := range allGPUs(snap.Nodes) {
		refs[g.ID] = g.Ref()
	}
	ask := func(kind string, gpus int, m Model) WhatIfOption {
		probe := Job{Owner: a.User, Name: "what-if", Type: TypeOther, GPUs: gpus, Model: m.String(), Class: class,
			Preemptible: req.Preemptible || class == ClassLow, Hints: Hints{Guess: req.Duration}, State: JobQueued, SubmittedAt: now}
		snap.Estimates[0] = s.estimator.Estimate(probe, now)
		pj := s.planner.WhatIf(now, snap, probe)
		opt := WhatIfOption{Kind: kind, GPUs: gpus, Model: m.String(), StartP50: pj.StartP50, StartP90: pj.StartP90,
			EndP50: pj.EndP50, EndP90: pj.EndP90, Reason: pj.Reason, Estimate: pj.Estimate}
		for _, id := range pj.GPUs {
			opt.Assigned = append(opt.Assigned, refs[id])
		}
		if pj.StartNow {
			opt.Reason = "it would start now"
		}
		return opt
	}
	ans := WhatIfAnswer{PlannedAt: now, Asked: ask("asked", req.GPUs, model)}
	if half := req.GPUs / 2; half >= 1 {
		ans.Alternatives = append(ans.Alternatives, ask("fewer", half, model))
		if half > 1 {
			ans.Alternatives = append(ans.Alternatives, ask("fewer", 1, model))
		}
	}
	if !model.IsZero() {
		for _, m := range familiesOf(snap.Nodes) {
			if m.Family != model.Family && checkDemand(snap.Nodes, demand{count: req.GPUs, model: m}) == nil {
				ans.Alternatives = append(ans.Alternatives, ask("model", req.GPUs, m))
			}
		}
	}
	return ans, nil
}
