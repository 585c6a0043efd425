package core

import (
	"cmp"
	"slices"
	"time"
)

// demand is a request for GPUs over a window, as the assigner sees it.
type demand struct {
	count      int
	model      Model
	node       string // "" for any node
	sameNode   bool   // all GPUs on one node
	start, end time.Time
}

func (d demand) at(start time.Time) demand {
	d.end = start.Add(d.end.Sub(d.start))
	d.start = start
	return d
}

// nodeFree is one node's GPUs that are free for a demand's window, best
// candidates first.
type nodeFree struct {
	name  string
	gpus  []GPU
	touch map[int64]int // GPU ID → commitments that end at start or begin at end
}

// freeByNode returns, per node that matches d, the up GPUs of d's model with
// no slot overlapping d's window. GPUs whose neighbouring commitments touch
// the window come first: filling a gap exactly leaves less fragmented time.
func freeByNode(nodes []Node, slots []Slot, d demand) []nodeFree {
	busy := map[int64]bool{}
	touch := map[int64]int{}
	for _, s := range slots {
		switch {
		case s.Overlaps(d.start, d.end):
			busy[s.GPUID] = true
		case s.End.Equal(d.start) || s.Start.Equal(d.end):
			touch[s.GPUID]++
		}
	}
	var out []nodeFree
	for _, n := range nodes {
		if d.node != "" && n.Name != d.node {
			continue
		}
		nf := nodeFree{name: n.Name, touch: touch}
		for _, g := range n.GPUs {
			if g.Schedulable() && !busy[g.ID] && d.model.Matches(g.Model()) {
				nf.gpus = append(nf.gpus, g)
			}
		}
		slices.SortStableFunc(nf.gpus, func(a, b GPU) int {
			return cmp.Or(cmp.Compare(touch[b.ID], touch[a.ID]), cmp.Compare(a.Index, b.Index))
		})
		if len(nf.gpus) > 0 {
			out = append(out, nf)
		}
	}
	return out
}

// touchScore sums the touch counts of the first k free GPUs of a node.
func (nf nodeFree) touchScore(k int) int {
	t := 0
	for _, g := range nf.gpus[:k] {
		t += nf.touch[g.ID]
	}
	return t
}

// assign picks concrete GPUs for d, best fit (DESIGN §5):
//  1. one node if any can hold all of them: the node left with the fewest
//     free GPUs, then the one whose neighbours touch the window most, then by name;
//  2. otherwise (unless d.sameNode) as few nodes as possible: the largest
//     free nodes whole, the remainder on the best-fitting node.
//
// It returns nil when d cannot be met.
func assign(nodes []Node, slots []Slot, d demand) []GPU {
	free := freeByNode(nodes, slots, d)
	if best, ok := bestFit(free, d.count); ok {
		return free[best].gpus[:d.count]
	}
	if d.sameNode {
		return nil
	}
	slices.SortStableFunc(free, func(a, b nodeFree) int {
		return cmp.Or(cmp.Compare(len(b.gpus), len(a.gpus)), cmp.Compare(a.name, b.name))
	})
	var picked []GPU
	for need := d.count; need > 0; {
		if len(free) == 0 {
			return nil
		}
		if best, ok := bestFit(free, need); ok {
			return append(picked, free[best].gpus[:need]...)
		}
		picked = append(picked, free[0].gpus...)
		need -= len(free[0].gpus)
		free = free[1:]
	}
	return picked
}

// bestFit returns the index of the node that holds k GPUs with the fewest left over.
func bestFit(free []nodeFree, k int) (int, bool) {
	best := -1
	for i, nf := range free {
		if len(nf.gpus) < k {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := free[best]
		if c := cmp.Or(
			cmp.Compare(len(nf.gpus), len(b.gpus)),
			cmp.Compare(b.touchScore(k), nf.touchScore(k)),
			cmp.Compare(nf.name, b.name),
		); c < 0 {
			best = i
		}
	}
	return best, best >= 0
}

// maxAssignable returns how many GPUs of d's kind are free in d's window,
// on one node when d.sameNode.
func maxAssignable(nodes []Node, slots []Slot, d demand) int {
	total, most := 0, 0
	for _, nf := range freeByNode(nodes, slots, d) {
		total += len(nf.gpus)
		most = max(most, len(nf.gpus))
	}
	if d.sameNode {
		return most
	}
	return total
}

// Alternative is something the requester could book instead of a refused request.
type Alternative struct {
	Kind  string    `json:"kind"` // "later": same size, later; "fewer": fewer GPUs, same window; "model": another model; "shorter": a shorter extension
	GPUs  int       `json:"gpus"`
	Model string    `json:"model,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// alternatives suggests, for a demand that cannot be met, the earliest
// window of the same size within the horizon, the most GPUs free in the
// requested window, and other models that are free in it. slots must cover
// [d.start, horizonEnd + the demand's length].
func alternatives(nodes []Node, slots []Slot, d demand, horizonEnd time.Time) []Alternative {
	var alts []Alternative
	if start, ok := earliestStart(nodes, slots, d, horizonEnd); ok {
		alts = append(alts, Alternative{Kind: "later", GPUs: d.count, Model: d.model.String(), Start: start, End: start.Add(d.end.Sub(d.start))})
	}
	if k := maxAssignable(nodes, slots, d); k > 0 && k < d.count {
		alts = append(alts, Alternative{Kind: "fewer", GPUs: k, Model: d.model.String(), Start: d.start, End: d.end})
	}
	if !d.model.IsZero() {
		for _, m := range familiesOf(nodes) {
			if m.Family == d.model.Family {
				continue
			}
			other := d
			other.model = m
			if assign(nodes, slots, other) != nil {
				alts = append(alts, Alternative{Kind: "model", GPUs: d.count, Model: m.Family, Start: d.start, End: d.end})
			}
		}
	}
	return alts
}

// earliestStart finds the first start after d.start at which d fits and
// ends at or before horizonEnd (so the window can be booked). Free time only
// begins where a commitment ends, so those ends are the only candidates.
func earliestStart(nodes []Node, slots []Slot, d demand, horizonEnd time.Time) (time.Time, bool) {
	var cands []time.Time
	for _, s := range slots {
		if s.End.After(d.start) && !s.End.Add(d.end.Sub(d.start)).After(horizonEnd) {
			cands = append(cands, s.End)
		}
	}
	slices.SortFunc(cands, time.Time.Compare)
	cands = slices.CompactFunc(cands, time.Time.Equal)
	for _, c := range cands {
		if assign(nodes, slots, d.at(c)) != nil {
			return c, true
		}
	}
	return time.Time{}, false
}

// familiesOf lists the model families present in nodes, sorted.
func familiesOf(nodes []Node) []Model {
	seen := map[string]bool{}
	var out []Model
	for _, g := range allGPUs(nodes) {
		if f := g.Model().Family; !seen[f] {
			seen[f] = true
			out = append(out, Model{Family: f})
		}
	}
	slices.SortFunc(out, func(a, b Model) int { return cmp.Compare(a.Family, b.Family) })
	return out
}

// conflictsWith returns the reservations (and running jobs) holding GPUs of
// d's kind during d's window, earliest first, at most limit of them.
func conflictsWith(nodes []Node, slots []Slot, d demand, limit int) []ReservationRef {
	candidate := map[int64]bool{}
	for _, g := range allGPUs(nodes) {
		if (d.node == "" || g.Node == d.node) && d.model.Matches(g.Model()) {
			candidate[g.ID] = true
		}
	}
	seen := map[string]bool{}
	var refs []ReservationRef
	var ids, jobs []int64
	for _, s := range slots {
		if candidate[s.GPUID] && s.Overlaps(d.start, d.end) && !seen[s.Holder()] {
			seen[s.Holder()] = true
			ids, jobs = append(ids, s.Reservation), append(jobs, s.Job)
			refs = append(refs, s.Ref())
		}
	}
	order := make([]int, len(refs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(refs[a].Start.Compare(refs[b].Start), cmp.Compare(jobs[a], jobs[b]), cmp.Compare(ids[a], ids[b]))
	})
	out := make([]ReservationRef, 0, min(limit, len(refs)))
	for _, i := range order[:min(limit, len(order))] {
		out = append(out, refs[i])
	}
	return out
}
