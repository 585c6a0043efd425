package sim

import (
	"cmp"
	"slices"
)

// fifo starts jobs in arrival order and never lets a later job pass a
// waiting one. A drained job goes back to its place by arrival.
type fifo struct {
	s *simulation
	q []int // job indexes; index order is arrival order
}

func (p *fifo) arrive(j int)  { p.q = append(p.q, j) }
func (p *fifo) requeue(j int) { p.q = insertSorted(p.q, j, cmp.Compare[int]) }
func (p *fifo) stopped(int)   {}
func (p *fifo) queued() int   { return len(p.q) }

func (p *fifo) schedule() error {
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

// sjf starts the queued job with the shortest true remaining runtime first,
// and keeps going down the queue while anything fits: an oracle, since no
// scheduler knows runtimes in advance. It uses the true runtime to keep
// clear of booked windows too.
type sjf struct {
	s *simulation
	q []int // by remaining work, then arrival
}

func (p *sjf) order(a, b int) int {
	return cmp.Or(cmp.Compare(p.s.jobs[a].left, p.s.jobs[b].left), cmp.Compare(a, b))
}

func (p *sjf) arrive(j int)  { p.q = insertSorted(p.q, j, p.order) }
func (p *sjf) requeue(j int) { p.q = insertSorted(p.q, j, p.order) }
func (p *sjf) stopped(int)   {}
func (p *sjf) queued() int   { return len(p.q) }

func (p *sjf) schedule() error {
	s := p.s
	kept := p.q[:0]
	for i, ji := range p.q {
		if s.c.totalFree == 0 {
			kept = append(kept, p.q[i:]...)
			break
		}
		j := &s.jobs[ji]
		gpus := s.c.fitNow(s.now, j.t.GPUs, j.left, j.preemptible, nil)
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

// insertSorted inserts v into the sorted slice q, after any equal elements.
func insertSorted(q []int, v int, order func(a, b int) int) []int {
	i, _ := slices.BinarySearchFunc(q, v, order)
	for i < len(q) && order(q[i], v) == 0 {
		i++
	}
	return slices.Insert(q, i, v)
}
