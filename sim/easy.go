package sim

import (
	"cmp"
)

// easy is EASY backfilling as Slurm does it (Lifka 1995; Mu'alem and
// Feitelson 2001). Jobs are taken in arrival order; when the head does not
// fit, it is promised the earliest start the running jobs' expected ends
// allow (the shadow time) on concrete GPUs, and a later job may start now
// only if it fits now and either is expected to end by the shadow time or
// keeps off the head's GPUs. Expected runtimes are the requested times
// where the trace has them, else the estimator's P90 (simulation.expectation).
//
// The start it promises a job at submission is what a Slurm user would be
// told: the job's place when the queue ahead of it is laid out in order on
// the running jobs' expected ends, without backfilling.
type easy struct {
	s     *simulation
	q     []int // arrival order
	fresh []int // arrived since the last schedule

	prof    profile // the running jobs' expected ends, and the queue laid out on them
	exclude []bool  // per GPU: promised to the head
}

func (p *easy) arrive(j int)  { p.q = append(p.q, j); p.fresh = append(p.fresh, j) }
func (p *easy) requeue(j int) { p.q = insertSorted(p.q, j, cmp.Compare[int]) }
func (p *easy) stopped(int)   {}
func (p *easy) queued() int   { return len(p.q) }

func (p *easy) schedule() error {
	if err := p.startHeads(); err != nil {
		return err
	}
	if len(p.q) > 1 {
		if err := p.backfill(); err != nil {
			return err
		}
	}
	p.predict()
	return nil
}

// startHeads starts queue heads while they fit.
func (p *easy) startHeads() error {
	s := p.s
	for len(p.q) > 0 {
		j := &s.jobs[p.q[0]]
		gpus := s.c.fitNow(s.now, j.t.GPUs, j.expected, j.preemptible, nil)
		if gpus == nil {
			return nil
		}
		if err := s.start(p.q[0], gpus); err != nil {
			return err
		}
		p.q = p.q[1:]
	}
	return nil
}

// backfill promises the head its earliest start and starts later jobs that
// do not delay it.
func (p *easy) backfill() error {
	s := p.s
	head := &s.jobs[p.q[0]]
	p.prof.reset(s)
	shadow, promised := p.prof.earliest(head.t.GPUs, head.expected, head.preemptible)
	p.exclude = resize(p.exclude, len(s.c.holder))
	clear(p.exclude)
	for _, g := range promised {
		p.exclude[g] = true
	}
	kept := p.q[:1]
	for i := 1; i < len(p.q); i++ {
		ji := p.q[i]
		if s.c.totalFree == 0 {
			kept = append(kept, p.q[i:]...)
			break
		}
		j := &s.jobs[ji]
		var gpus []int32
		switch {
		case !s.c.mightFit(j.t.GPUs):
		case s.now+j.expected <= shadow:
			gpus = s.c.fitNow(s.now, j.t.GPUs, j.expected, j.preemptible, nil)
		default:
			gpus = s.c.fitNow(s.now, j.t.GPUs, j.expected, j.preemptible, p.exclude)
		}
		if gpus == nil {
			kept = append(kept, ji)
			continue
		}
		if err := s.start(ji, gpus); err != nil {
			return err
		}
	}
	p.q = kept
	return nil
}

// predict records, for the jobs that arrived since the last call, the start
// EASY would promise them now.
func (p *easy) predict() {
	s := p.s
	waiting := 0
	for _, ji := range p.fresh {
		if j := &s.jobs[ji]; j.queued {
			waiting++
		} else {
			j.predicted, j.predP50, j.predP90 = true, s.now, s.now
		}
	}
	p.fresh = p.fresh[:0]
	if waiting == 0 {
		return
	}
	p.prof.reset(s)
	for _, ji := range p.q {
		j := &s.jobs[ji]
		start, gpus := p.prof.earliest(j.t.GPUs, j.expected, j.preemptible)
		p.prof.occupy(gpus, start+j.expected)
		if !j.predicted {
			j.predicted, j.predP50, j.predP90 = true, start, start
			if waiting--; waiting == 0 {
				return
			}
		}
	}
}

// resize returns a slice of length n, reusing b's storage when it can.
func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
