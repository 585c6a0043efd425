package core

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Work is how much computing a job says it needs (DESIGN.md §6.2), read
// off its hints. Zero fields are unknown.
type Work struct {
	// FLOPs is the arithmetic of the job: 6 × parameters × tokens for
	// training (a forward and a backward pass over every token, the usual
	// count for dense transformers), 2 × parameters × tokens for evaluation
	// and inference (forward only).
	FLOPs float64
	// Steps is optimiser steps: as stated, else dataset × epochs ÷ batch
	// size (the batch being the global one).
	Steps float64
}

// WorkOf reads the work of a job of type t from its hints.
func WorkOf(t JobType, h Hints) Work {
	var w Work
	if h.Params > 0 && h.Tokens > 0 {
		perToken := 6.0
		if t == TypeEval || t == TypeInference {
			perToken = 2
		}
		w.FLOPs = perToken * h.Params * h.Tokens
	}
	switch {
	case h.Steps > 0:
		w.Steps = float64(h.Steps)
	case h.Dataset > 0 && h.Epochs > 0 && h.BatchSize > 0:
		w.Steps = math.Ceil(float64(h.Dataset) * float64(h.Epochs) / float64(h.BatchSize))
	}
	return w
}

// peakFLOPs is the dense 16-bit (BF16/FP16) tensor-core peak of one GPU,
// in FLOP/s, by model family, without structured sparsity (the datasheets
// print the sparse figure too, twice as large). Where a family comes in
// several forms the SXM / OAM module's figure is used.
var peakFLOPs = map[string]float64{
	"v100":  125e12,  // NVIDIA Tesla V100 datasheet (SXM2): 125 TFLOPS tensor performance
	"t4":    65e12,   // NVIDIA T4 datasheet: 65 TFLOPS mixed precision (FP16/FP32)
	"a10":   125e12,  // NVIDIA A10 datasheet: BF16 tensor core 125 TFLOPS (250 with sparsity)
	"a100":  312e12,  // NVIDIA A100 datasheet: BF16 tensor core 312 TFLOPS (624 with sparsity)
	"a800":  312e12,  // the A100's export variant, same compute
	"l4":    121e12,  // NVIDIA L4 datasheet: BF16 tensor core 242 TFLOPS with sparsity
	"l40s":  362e12,  // NVIDIA L40S datasheet: BF16 tensor core 733 TFLOPS with sparsity
	"h100":  989e12,  // NVIDIA H100 datasheet (SXM): BF16 tensor core 1,979 TFLOPS with sparsity
	"h800":  989e12,  // the H100's export variant, same compute
	"h200":  989e12,  // NVIDIA H200 datasheet (SXM): BF16 tensor core 1,979 TFLOPS with sparsity
	"h20":   148e12,  // NVIDIA H20 product brief: BF16 148 TFLOPS
	"b200":  2.25e15, // NVIDIA HGX B200 datasheet: FP16/BF16 36 PFLOPS for 8 GPUs with sparsity
	"mi250": 383e12,  // AMD Instinct MI250X datasheet: 383 TFLOPS peak BF16
	"mi300": 1307e12, // AMD Instinct MI300X datasheet: 1,307.4 TFLOPS peak BF16 (dense)
}

// plausibleMFU reports whether a run's model FLOPs utilisation, its
// FLOP/s per GPU over the GPU's peak, is one a real run could have: at
// least half a percent (a slower "run" had other hints than its work) and
// at most the peak.
func plausibleMFU(mfu float64) bool { return mfu >= 0.005 && mfu <= 1 }

// The FLOPs prior's model FLOPs utilisation: the share of the peak that a
// training job really sustains. Well-tuned large-model training reaches
// 40–55 %; typical research code a third or less; small models far less.
// The prior's three masses (a quarter, a half, a quarter) sit at these
// shares, so its band is wide: P50 at 35 %, P90 at 12 %.
var priorMFU = [3]float64{0.12, 0.35, 0.55}

// workKind is what a throughput counts: FLOPs or steps per second per GPU.
type workKind int

const (
	workFLOPs workKind = iota
	workSteps
)

// workLevel is a grouping of throughputs, fine to coarse within a kind.
type workLevel int

const (
	// FLOP/s per GPU: the owner's runs of the job on this family of GPU,
	// the owner's runs on it, everyone's runs on it.
	workOwnerNameFamily workLevel = iota
	workOwnerFamily
	workFamily
	// Steps per second per GPU: the owner's runs of the job on as many
	// GPUs, on any number.
	workOwnerNameGPUs
	workOwnerName
)

// workKey names one throughput group; fields its level does not use stay empty.
type workKey struct {
	level               workLevel
	owner, name, family string
	gpus                int
}

// workLevels lists the levels of a kind, finest first.
func workLevels(k workKind) []workLevel {
	if k == workFLOPs {
		return []workLevel{workOwnerNameFamily, workOwnerFamily, workFamily}
	}
	return []workLevel{workOwnerNameGPUs, workOwnerName}
}

func keyOf(l workLevel, owner, name, family string, gpus int) (workKey, bool) {
	switch l {
	case workOwnerNameFamily:
		return workKey{level: l, owner: owner, name: name, family: family}, owner != "" && name != ""
	case workOwnerFamily:
		return workKey{level: l, owner: owner, family: family}, owner != ""
	case workFamily:
		return workKey{level: l, family: family}, family != ""
	case workOwnerNameGPUs:
		return workKey{level: l, owner: owner, name: name, gpus: gpus}, owner != "" && name != ""
	}
	return workKey{level: l, owner: owner, name: name}, owner != "" && name != ""
}

// observeWork learns the throughput of a completed run. Runs that failed
// or were stopped did not do the work their hints describe, so they teach
// no throughput.
func (h *History) observeWork(r Run) {
	if r.Outcome != OutcomeCompleted || r.Duration <= 0 || r.GPUs <= 0 {
		return
	}
	for _, kind := range []workKind{workFLOPs, workSteps} {
		amount := r.Work.of(kind)
		if amount <= 0 {
			continue
		}
		x := math.Log(amount/float64(r.GPUs)) - logSeconds(r.Duration)
		if peak, ok := peakFLOPs[r.Family]; ok && kind == workFLOPs && !plausibleMFU(math.Exp(x)/peak) {
			continue // hints no run could meet (7 parameters meant as 7e9): they would teach nonsense
		}
		for _, l := range workLevels(kind) {
			k, ok := keyOf(l, r.Owner, r.Name, r.Family, r.GPUs)
			if !ok {
				continue
			}
			g := h.work[k]
			if g == nil {
				window, decay := h.cfg.Window, h.cfg.Decay
				if l == workFamily {
					window, decay = 16*window, 1 // everyone's runs on the family: a coarse group, like GPU count
				}
				g = newRunGroup(window, decay)
				h.work[k] = g
			}
			g.add(obs{x: x, at: r.EndedAt})
		}
	}
}

func (w Work) of(k workKind) float64 {
	if k == workFLOPs {
		return w.FLOPs
	}
	return w.Steps
}

// workDistribution is the distribution of j's log duration from its work
// and a throughput: learned (shrunk from the finest group with runs
// toward coarser ones) and, for FLOPs on a GPU family whose peak is known,
// toward the FLOPs prior. FLOPs are used when the hints give them, steps
// otherwise. same reports that the throughput was learned from earlier
// runs of the same job by the same owner. ok is false when the hints give
// no work or nothing is known about its throughput.
func (h *History) workDistribution(j Job, family string, now time.Time) (d distribution, words string, runs int, same, ok bool) {
	w := WorkOf(j.Type, j.Hints)
	if j.GPUs <= 0 {
		return nil, "", 0, false, false
	}
	for _, kind := range []workKind{workFLOPs, workSteps} {
		amount := w.of(kind)
		if amount <= 0 {
			continue
		}
		var gs []*runGroup
		for _, l := range workLevels(kind) {
			k, has := keyOf(l, j.Owner, j.Name, family, j.GPUs)
			if has {
				gs = append(gs, h.work[k])
			} else {
				gs = append(gs, nil)
			}
		}
		var prior distribution
		peak, known := peakFLOPs[family]
		if kind == workFLOPs && known {
			prior = distribution{{x: math.Log(priorMFU[0] * peak), p: 0.25}, {x: math.Log(priorMFU[1] * peak), p: 0.5},
				{x: math.Log(priorMFU[2] * peak), p: 0.25}}
		}
		thr, finest, ok := h.shrink(gs, prior, now)
		if !ok {
			continue
		}
		// log duration = log(work per GPU) − log(throughput per GPU): the
		// fastest throughput is the shortest run, so the order reverses.
		perGPU := math.Log(amount / float64(j.GPUs))
		d = make(distribution, len(thr))
		for i, m := range thr {
			d[len(thr)-1-i] = mass{x: perGPU - m.x, p: m.p}
		}
		levels := workLevels(kind)
		if finest >= 0 {
			runs = len(gs[finest].runs)
			same = levels[finest] == workOwnerNameFamily || levels[finest] == workOwnerNameGPUs || levels[finest] == workOwnerName
		}
		return d, describeWork(kind, levels, finest, runs, j, family, amount, peak), runs, same, true
	}
	return nil, "", 0, false, false
}

// describeWork says in words where a work-based estimate came from.
func describeWork(kind workKind, levels []workLevel, finest, n int, j Job, family string, amount, peak float64) string {
	on := strconv.Itoa(j.GPUs) + "×" + cmp.Or(family, "GPU")
	size := fmt.Sprintf("%.2g FLOPs on %s", amount, on)
	if kind == workSteps {
		size = fmt.Sprintf("%.0f steps on %s", amount, on)
	}
	if finest < 0 {
		return fmt.Sprintf("from the work, %s at %.0f–%.0f%% of the %s peak of %.0f TFLOP/s (no earlier runs)",
			size, 100*priorMFU[0], 100*priorMFU[2], family, peak/1e12)
	}
	runs := fmt.Sprintf("%d earlier run", n)
	if n != 1 {
		runs += "s"
	}
	switch levels[finest] {
	case workOwnerNameFamily:
		return fmt.Sprintf("from %s of %s by %s on %s, scaled to %s", runs, j.Name, j.Owner, family, size)
	case workOwnerFamily:
		return fmt.Sprintf("from %s by %s on %s, scaled to %s", runs, j.Owner, family, size)
	case workFamily:
		return fmt.Sprintf("from %s on %s, scaled to %s", runs, family, size)
	case workOwnerNameGPUs:
		return fmt.Sprintf("from %s of %s by %s on %d GPUs, scaled to %s", runs, j.Name, j.Owner, j.GPUs, size)
	}
	return fmt.Sprintf("from %s of %s by %s, scaled to %s", runs, j.Name, j.Owner, size)
}
