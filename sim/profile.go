package sim

import (
	"cmp"
	"slices"
	"time"
)

// profile is EASY's view of the future: when each GPU is expected to be
// free, from the running jobs' expected ends and the jobs laid out on it
// so far. Each node's GPUs are also kept sorted by that time, so that the
// earliest start of a one-node job is one look per node.
type profile struct {
	s      *simulation
	free   []time.Duration // per GPU
	sorted []gpuFree       // per node, its gpn GPUs by free time (ties by GPU)
	vals   []time.Duration // scratch
	cands  []time.Duration // scratch
}

// gpuFree is one GPU and when it is expected to be free.
type gpuFree struct {
	at  time.Duration
	gpu int32
}

func compareGPUFree(a, b gpuFree) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.gpu, b.gpu))
}

// reset starts from the running jobs: a free GPU is free now, a held one at
// its job's expected end (now, if the job has outrun it).
func (p *profile) reset(s *simulation) {
	p.s = s
	p.free = resize(p.free, len(s.c.holder))
	p.sorted = resize(p.sorted, len(s.c.holder))
	for g, h := range s.c.holder {
		p.free[g] = s.now
		if h >= 0 {
			j := &s.jobs[h]
			p.free[g] = max(s.now, j.start+j.expected)
		}
		p.sorted[g] = gpuFree{at: p.free[g], gpu: int32(g)}
	}
	for n := range s.c.nodes {
		slices.SortFunc(p.node(n), compareGPUFree)
	}
}

// node returns node n's GPUs sorted by free time.
func (p *profile) node(n int) []gpuFree { gpn := p.s.c.gpn; return p.sorted[n*gpn : (n+1)*gpn] }

// occupy marks gpus busy until t.
func (p *profile) occupy(gpus []int32, t time.Duration) {
	gpn := p.s.c.gpn
	for _, g := range gpus {
		p.free[g] = t
		slots := p.node(int(g) / gpn)
		for i := range slots {
			if slots[i].gpu == g {
				slots[i].at = t
			}
		}
	}
	last := -1
	for _, g := range gpus {
		if n := int(g) / gpn; n != last {
			slices.SortFunc(p.node(n), compareGPUFree)
			last = n
		}
	}
}

// earliest finds the earliest start for a job of g GPUs expected to run d,
// and the GPUs it would get: for a one-node job the node where its g
// earliest-free GPUs are free soonest (lowest node on ties); for a larger
// job the first instant enough wholly free nodes are, the lowest-numbered
// of them. Non-preemptible jobs also keep clear of booked windows.
func (p *profile) earliest(g int, d time.Duration, preemptible bool) (time.Duration, []int32) {
	s, c := p.s, p.s.c
	if g <= c.gpn {
		best, bestNode := time.Duration(-1), -1
		for n := range c.nodes {
			t := max(s.now, p.node(n)[g-1].at)
			if best >= 0 && t >= best {
				continue // windows only push a start later
			}
			if !preemptible {
				t = c.pushPast(n, t, d)
			}
			if best < 0 || t < best {
				best, bestNode = t, n
			}
		}
		gpus := make([]int32, g)
		for i, sl := range p.node(bestNode)[:g] {
			gpus[i] = sl.gpu
		}
		return best, gpus
	}
	k := c.nodesFor(g)
	p.vals = p.vals[:0]
	for n := range c.nodes {
		p.vals = append(p.vals, p.nodeFree(n))
	}
	slices.Sort(p.vals)
	t := max(s.now, p.vals[k-1])
	if !preemptible {
		t = p.clearStart(k, t, d)
	}
	gpus := make([]int32, 0, k*c.gpn)
	for n := 0; n < c.nodes && len(gpus) < k*c.gpn; n++ {
		if p.nodeFree(n) <= t && (preemptible || c.clear(n, t, d)) {
			for i := n * c.gpn; i < (n+1)*c.gpn; i++ {
				gpus = append(gpus, int32(i))
			}
		}
	}
	return t, gpus[:g]
}

// nodeFree is when all of node n's GPUs are expected to be free.
func (p *profile) nodeFree(n int) time.Duration { return p.node(n)[p.s.c.gpn-1].at }

// clearStart returns the first instant from t on at which k nodes are both
// free and clear of windows for d. Candidates are the instants nodes free
// up and windows end; the last of them always works.
func (p *profile) clearStart(k int, t, d time.Duration) time.Duration {
	c := p.s.c
	if c.booked == 0 {
		return t
	}
	p.cands = append(p.cands[:0], t)
	for n := range c.nodes {
		if f := p.nodeFree(n); f > t {
			p.cands = append(p.cands, f)
		}
		for _, w := range c.windows[n] {
			if w.end > t {
				p.cands = append(p.cands, w.end)
			}
		}
	}
	slices.Sort(p.cands)
	for _, at := range slices.Compact(p.cands) {
		ok := 0
		for n := range c.nodes {
			if p.nodeFree(n) <= at && c.clear(n, at, d) {
				ok++
			}
		}
		if ok >= k {
			return at
		}
	}
	return p.cands[len(p.cands)-1]
}
