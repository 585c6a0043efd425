package core

import (
	"cmp"
	"slices"
)

// Gangs: a job larger than any node takes whole nodes that start
// together (the last one may be partial), found by sweeping the nodes'
// "wholly free" windows.

// fitGangIndexed is fitGang for a job that may use any usable GPU. The
// node index lists nodes by the earliest instant they could be wholly free
// for the job; the first ones that hold enough GPUs give an upper bound on
// its start, and only the nodes whose bound is no later take part in the
// sweep.
func (p Planner) fitGangIndexed(tl *timelines, sk seeker, usable func(*gpuLine) bool, counts []int, k int, from, limit int64, buf *[]window) (fit, bool) {
	s := seekerOnly{seeker: sk, usable: usable}
	t := tl.tree(treeKey{sem: sk.semantics(), model: sk.model, k: wholeNodes(counts)})
	sw := &tl.sweep
	sw.windows = sw.windows[:0]
	// Nodes join in the order of their bounds. Once the nodes so far are
	// free together at an instant no later than the next node's bound, no
	// later node can make it earlier. The sweep runs when the number of
	// nodes doubles, so that the nodes taken are at most twice the needed.
	got, added, check := 0, 0, 1
	at, found := int64(0), false
	t.ascending(sk.dur, func(ni int, lb int64) bool {
		if lb > limit || (found && at <= lb) {
			return false
		}
		if counts[ni] == 0 {
			return true
		}
		sw.add(s.nodeWindows(tl, ni, max(from, lb), limit, buf), ni, counts[ni])
		got += counts[ni]
		if added++; got >= k && added >= check {
			check *= 2
			at, found = sw.earliest(k, limit)
		}
		return true
	})
	if at, found = sw.earliest(k, limit); !found {
		return fit{}, false
	}
	return s.gangOn(tl, counts, k, at, sw.freeAt(at), true, buf)
}

// gangSweep finds the earliest instant at which enough nodes are wholly
// free together, from each node's windows of feasible starts.
type gangSweep struct {
	windows []nodeWindow
	events  []gangEvent
	free    []int // freeAt's answer
	gpus    []int // gangOn's answer
}

type gangEvent struct {
	at    int64
	delta int
}

type nodeWindow struct {
	window
	node, gpus int
}

func (g *gangSweep) add(ws []window, ni, gpus int) {
	for _, w := range ws {
		g.windows = append(g.windows, nodeWindow{window: w, node: ni, gpus: gpus})
	}
}

// earliest returns the first instant no later than limit at which the
// windows hold k GPUs.
func (g *gangSweep) earliest(k int, limit int64) (int64, bool) {
	events := g.events[:0]
	for _, w := range g.windows {
		events = append(events, gangEvent{w.from, w.gpus})
		if w.to < never {
			events = append(events, gangEvent{w.to + 1, -w.gpus})
		}
	}
	g.events = events
	slices.SortFunc(events, func(a, b gangEvent) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	free := 0
	for _, e := range events {
		if e.at > limit {
			break
		}
		if free += e.delta; e.delta > 0 && free >= k {
			return e.at, true
		}
	}
	return 0, false
}

// freeAt returns the nodes wholly free at t, in node order. A node's
// windows do not overlap: at most one holds t.
func (g *gangSweep) freeAt(t int64) []int {
	out := g.free[:0]
	for _, w := range g.windows {
		if w.from <= t && t <= w.to {
			out = append(out, w.node)
		}
	}
	slices.Sort(out)
	g.free = out
	return out
}

// gangOn takes whole nodes among free, in order, until they hold k GPUs:
// all usable GPUs of each but the last, and the first ones by index of the
// last. Known says the nodes are known to be wholly free at t (the sweep's
// windows said so); otherwise each is checked. The fit's GPUs are valid
// until the next call.
func (s seekerOnly) gangOn(tl *timelines, counts []int, k int, t int64, free []int, known bool, buf *[]window) (fit, bool) {
	whole := tl.sweep.gpus[:0]
	defer func() { tl.sweep.gpus = whole[:0] }()
	for _, ni := range free {
		if known {
			for _, gi := range tl.nodes[ni].gpus {
				if s.usable(&tl.gpus[gi]) {
					whole = append(whole, gi)
				}
			}
		} else if f, ok := s.earliestOn(tl, ni, counts[ni], t, t, buf); ok {
			whole = append(whole, f.gpus...)
		} else {
			continue
		}
		if len(whole) >= k {
			byPlace := func(a, b int) int {
				ga, gb := &tl.gpus[a], &tl.gpus[b]
				return cmp.Or(cmp.Compare(ga.node, gb.node), cmp.Compare(ga.index, gb.index))
			}
			if !slices.IsSortedFunc(whole, byPlace) {
				slices.SortFunc(whole, byPlace)
			}
			return fit{start: t, gpus: whole[:k]}, true
		}
	}
	return fit{}, false
}

// wholeNodes is the node tree's k for a gang: the nodes' common number of
// usable GPUs when they share one (the one-node tree for that k serves),
// else 0 (each node's own).
func wholeNodes(counts []int) int {
	c := 0
	for _, n := range counts {
		switch {
		case n == 0:
		case c == 0:
			c = n
		case n != c:
			return 0
		}
	}
	return c
}

// fitGang places a job larger than any node on whole nodes that start
// together: the GPUs of every node but the last, and best-fitting GPUs of
// the last. Each node's feasible starts (all its usable GPUs free for the
// duration) form windows; a sweep over all nodes' windows finds the
// earliest instant at which enough nodes are free together.
func (p Planner) fitGang(tl *timelines, sk seeker, usable func(*gpuLine) bool, counts []int, k int, from, limit int64, buf *[]window) (fit, bool) {
	s := seekerOnly{seeker: sk, usable: usable}
	type event struct {
		at    int64
		delta int
	}
	// Nodes wholly free from their tails on give an upper bound: the
	// earliest instant by which enough of them are free for good.
	type tailed struct {
		tail int64
		n    int
	}
	var tails []tailed
	for ni := range tl.nodes {
		if counts[ni] > 0 {
			tl.summarize(ni)
			tails = append(tails, tailed{max(tl.nodes[ni].tail, from), counts[ni]})
		}
	}
	slices.SortFunc(tails, func(a, b tailed) int { return cmp.Compare(a.tail, b.tail) })
	bound, got := int64(never), 0
	for _, t := range tails {
		if got += t.n; got >= k {
			bound = t.tail
			break
		}
	}
	limit = min(limit, bound)
	var events []event
	for ni := range tl.nodes {
		if counts[ni] == 0 || max(tl.lowerBound(ni, counts[ni]), from) > limit {
			continue
		}
		for _, w := range s.nodeWindows(tl, ni, from, limit, buf) {
			events = append(events, event{w.from, counts[ni]}, event{w.to + 1, -counts[ni]})
		}
	}
	slices.SortFunc(events, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	free := 0
	for _, e := range events {
		free += e.delta
		if e.delta > 0 && free >= k && e.at <= limit {
			return s.gangAt(tl, counts, k, e.at, buf)
		}
	}
	return fit{}, false
}

// nodeWindows returns the windows of starts in [from, limit] at which all
// usable GPUs of node ni are free for the duration: the intersection of
// the GPUs' windows. The result is valid until the next call.
func (s seekerOnly) nodeWindows(tl *timelines, ni int, from, limit int64, buf *[]window) []window {
	out, next := tl.nodeOut[:0], tl.nodeNext[:0]
	defer func() { tl.nodeOut, tl.nodeNext = out, next }()
	first := true
	for _, gi := range tl.nodes[ni].gpus {
		if !s.usable(&tl.gpus[gi]) {
			continue
		}
		ws := s.windows(tl, gi, from, limit, (*buf)[:0])
		*buf = ws
		if first {
			first = false
			for _, w := range ws {
				out = append(out, window{from: w.from, to: w.to})
			}
		} else {
			next = intersect(out, ws, next[:0])
			out, next = next, out
		}
		if len(out) == 0 {
			break
		}
	}
	return out
}

// intersect appends to out the ranges of starts that lie in a window of
// a and in one of b; both lists are in order and do not overlap.
func intersect(a, b, out []window) []window {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to); from <= to {
			out = append(out, window{from: from, to: to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// gangAt gathers wholly free nodes at t until they hold k GPUs.
func (s seekerOnly) gangAt(tl *timelines, counts []int, k int, t int64, buf *[]window) (fit, bool) {
	var free []int
	for ni := range tl.nodes {
		if counts[ni] > 0 && max(tl.lowerBound(ni, counts[ni]), t) <= t {
			free = append(free, ni)
		}
	}
	return s.gangOn(tl, counts, k, t, free, false, buf)
}
