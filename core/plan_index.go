package core

import (
	"math/bits"
	"slices"
)

// The planner's node index answers, for a job of k GPUs and duration d,
// "which nodes could start it earliest" without looking at every node.
//
// Each GPU's free time, as one kind of job sees it, is a list of gaps. Only
// the gaps longer than every earlier one matter for "the earliest gap of at
// least d": they form a staircase, starts and lengths both rising, that ends
// with the open gap after the GPU's last commitment. A node's staircase for
// k GPUs gives, for every d, the k-th earliest of its GPUs' answers: a lower
// bound on when k of its GPUs can start a job of length d (exact for one
// GPU, unless a reservation's clearance pushes the start later). A segment
// tree over the nodes keeps in each inner vertex the pointwise minimum of
// its children's staircases, so a search descends only into ranges that
// hold a node whose bound beats the best start found so far.
//
// Trees are built on first use for each (kind of job, model, k) a pass
// meets, and catch up with the nodes that changed since they were last
// used from the timelines' change log.

// step is one stair: a start at which the next len seconds are free.
type step struct{ len, start int64 }

// staircase is a list of steps with lengths and starts both strictly
// rising. at(d) is the earliest start with at least d free seconds.
type staircase []step

func (s staircase) at(d int64) int64 {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].len < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s) {
		return never
	}
	return s[lo].start
}

// semantics says which commitments block a job: all of them for a job
// that must not run into a reservation, only jobs for a preemptible one.
type semantics uint8

const (
	semAll semantics = iota
	semJobs
)

// gpuStairs appends the staircase of a GPU's free time from now on.
func gpuStairs(busy []interval, now int64, sem semantics, out staircase) staircase {
	out = out[:0]
	cursor, longest := now, int64(0)
	for _, iv := range busy {
		if iv.end <= cursor || (sem == semJobs && iv.kind != ivJob) {
			continue
		}
		if l := iv.start - cursor; l > longest {
			out = append(out, step{len: l, start: cursor})
			longest = l
		}
		cursor = max(cursor, iv.end)
	}
	return append(out, step{len: never, start: cursor})
}

// treeKey names one node tree: the kind of job, the model it asks for
// and how many GPUs of a node it needs (0: all usable ones, for gangs).
type treeKey struct {
	sem   semantics
	model Model
	k     int
}

// nodeIndex holds one placement pass's trees and the GPUs' staircases.
type nodeIndex struct {
	trees   map[treeKey]*stairTree
	bundles map[bundleKey]*bundle
	stairs  [2][]staircase // per semantics, per GPU
	ver     [2][]uint32    // the GPU version each staircase reflects
	pos     []int
	in      []staircase
	spare   staircase // scratch for a vertex's next value
	// kept, keptBundles and keptTrees hold an earlier plan's per-GPU
	// staircases, node staircases and trees, whose memory this plan's
	// reuse (see timelines.reset): rebuilding them in fresh memory was a
	// tenth of a replay's time, most of it in growing slices.
	kept        [2][]staircase
	keptBundles map[bundleKey]*bundle
	keptTrees   map[treeKey]*stairTree
	last        *stairTree // the tree tree returned last, one of trees
}

// next returns an empty index for the next plan that keeps ix's memory.
func (ix *nodeIndex) next() nodeIndex {
	out := nodeIndex{pos: ix.pos[:0], in: ix.in[:0], spare: ix.spare[:0], kept: ix.kept,
		keptBundles: ix.keptBundles, keptTrees: ix.keptTrees}
	for sem := range ix.stairs {
		if ix.stairs[sem] != nil {
			out.kept[sem] = ix.stairs[sem]
		}
	}
	if out.keptBundles == nil {
		out.keptBundles, out.keptTrees = map[bundleKey]*bundle{}, map[treeKey]*stairTree{}
	}
	for k, b := range ix.bundles {
		out.keptBundles[k] = b
	}
	for k, t := range ix.trees {
		out.keptTrees[k] = t
	}
	clear(ix.bundles)
	clear(ix.trees)
	out.bundles, out.trees = ix.bundles, ix.trees
	return out
}

// bundleKey names the node staircases of one kind of job and one model,
// for every k at once: one sweep over a node's GPUs serves all its trees.
type bundleKey struct {
	sem   semantics
	model Model
}

type bundle struct {
	usable []uint64      // per node: which of its GPUs the model may use
	ver    []uint32      // the node version each node's staircases reflect
	stairs [][]staircase // per node, per k-1
}

// bundleOf returns the bundle for key, made on first use in a plan.
func (tl *timelines) bundleOf(key bundleKey) *bundle {
	ix := &tl.index
	if ix.bundles == nil {
		ix.bundles = map[bundleKey]*bundle{}
	}
	b, ok := ix.bundles[key]
	if !ok {
		b = ix.keptBundles[key]
		if b == nil {
			b = &bundle{}
		}
		delete(ix.keptBundles, key)
		b.usable = resized(b.usable, len(tl.nodes))
		b.ver = resized(b.ver, len(tl.nodes))
		b.stairs = resized(b.stairs, len(tl.nodes))
		for ni, n := range tl.nodes {
			b.usable[ni] = 0
			for i, gi := range n.gpus {
				if g := &tl.gpus[gi]; g.up && key.model.Matches(g.model) {
					b.usable[ni] |= 1 << i
				}
			}
			b.ver[ni] = tl.nodes[ni].ver - 1 // not computed yet
		}
		ix.bundles[key] = b
	}
	return b
}

// nodeStairs returns node ni's staircases in bundle b (of semantics sem)
// for every k (index k-1).
func (tl *timelines) nodeStairs(b *bundle, sem semantics, ni int) ([]staircase, uint64) {
	ix := &tl.index
	if b.ver[ni] != tl.nodes[ni].ver {
		ix.in = ix.in[:0]
		for i, gi := range tl.nodes[ni].gpus {
			if b.usable[ni]&(1<<i) != 0 {
				ix.in = append(ix.in, tl.gpuStairsOf(gi, sem))
			}
		}
		b.stairs[ni], ix.pos = allKthStairs(ix.in, b.stairs[ni], ix.pos)
		b.ver[ni] = tl.nodes[ni].ver
	}
	return b.stairs[ni], b.usable[ni]
}

// allKthStairs computes, in one sweep over the inputs' steps, the
// staircase of the k-th earliest answer among them for every k from 1 to
// len(in): out[k-1] is the staircase for k.
func allKthStairs(in []staircase, out []staircase, pos []int) ([]staircase, []int) {
	m := len(in)
	for len(out) < m {
		out = append(out, nil)
	}
	out = out[:m]
	for i := range out {
		out[i] = out[i][:0]
	}
	pos = append(pos[:0], make([]int, m)...)
	// vals holds the inputs' current answers in order. From one length to
	// the next only the inputs whose step ended move, and only later: each
	// is moved up in place rather than sorting all again.
	var vals [maxGPUsPerNode]int64
	for i, s := range in {
		v := int64(never)
		if len(s) > 0 {
			v = s[0].start
		}
		j := i
		for j > 0 && vals[j-1] > v {
			vals[j] = vals[j-1]
			j--
		}
		vals[j] = v
	}
	for {
		l := int64(-1)
		for i, s := range in {
			if p := pos[i]; p < len(s) && (l < 0 || s[p].len < l) {
				l = s[p].len
			}
		}
		if l < 0 {
			return out, pos
		}
		for k := range m {
			v := vals[k]
			if v == never {
				break
			}
			if n := len(out[k]); n > 0 && out[k][n-1].start == v {
				out[k][n-1].len = l
			} else {
				out[k] = append(out[k], step{len: l, start: v})
			}
		}
		for i, s := range in {
			p := pos[i]
			if p >= len(s) || s[p].len != l {
				continue
			}
			pos[i]++
			old, v := s[p].start, int64(never)
			if p+1 < len(s) {
				v = s[p+1].start
			}
			// Replace the last copy of old with v, moving it up.
			j := m - 1
			for vals[j] != old {
				j--
			}
			for j+1 < m && vals[j+1] < v {
				vals[j] = vals[j+1]
				j++
			}
			vals[j] = v
		}
	}
}

// stairTree is a segment tree over nodes; vertex 1 is the root and leaf i
// is vertex size+i.
type stairTree struct {
	key     treeKey
	bundle  *bundle // the node staircases its leaves come from
	size    int
	v       []staircase
	leafVer []uint32   // the node version each leaf reflects
	seen    int        // how much of the change log the tree has read
	heap    vertexHeap // ascending's, kept for the next search
}

// gpuStairsOf returns GPU gi's staircase, recomputing it if it changed.
func (tl *timelines) gpuStairsOf(gi int, sem semantics) staircase {
	ix := &tl.index
	if ix.ver[sem] == nil {
		// Every version is 0 here and every GPU's is at least 1, so each
		// staircase is computed afresh, into a kept one's memory.
		st := ix.kept[sem]
		if len(st) < len(tl.gpus) {
			st = append(st, make([]staircase, len(tl.gpus)-len(st))...)
		}
		ix.stairs[sem], ix.kept[sem] = st[:len(tl.gpus)], nil
		ix.ver[sem] = make([]uint32, len(tl.gpus))
	}
	if g := &tl.gpus[gi]; ix.ver[sem][gi] != g.ver {
		ix.stairs[sem][gi] = gpuStairs(g.busy, tl.now, sem, ix.stairs[sem][gi])
		ix.ver[sem][gi] = g.ver
	}
	return ix.stairs[sem][gi]
}

// tree returns the tree for key, built or brought up to date.
func (tl *timelines) tree(key treeKey) *stairTree {
	ix := &tl.index
	if ix.trees == nil {
		ix.trees = map[treeKey]*stairTree{}
	}
	t := ix.last // most jobs in a row need the same tree; a lookup hashes its model's names
	if t == nil || t.key != key {
		var ok bool
		if t, ok = ix.trees[key]; !ok {
			t = tl.buildTree(key, ix.keptTrees[key])
			delete(ix.keptTrees, key)
			ix.trees[key], ix.last = t, t
			return t
		}
		ix.last = t
	}
	for ; t.seen < len(tl.changes); t.seen++ {
		ni := tl.changes[t.seen]
		if t.leafVer[ni] == tl.nodes[ni].ver {
			continue
		}
		// Go up only while vertices change: most placements move no
		// minimum far up the tree.
		if !tl.leaf(t, ni) {
			continue
		}
		for v := (t.size + ni) / 2; v >= 1 && tl.merge(t, v); v /= 2 {
		}
	}
	return t
}

// buildTree builds the tree for key, in the memory of old when there is
// one (an earlier plan's tree for the same key).
func (tl *timelines) buildTree(key treeKey, old *stairTree) *stairTree {
	size := 1
	for size < len(tl.nodes) {
		size *= 2
	}
	if old == nil {
		old = &stairTree{}
	}
	t := &stairTree{key: key, bundle: tl.bundleOf(bundleKey{sem: key.sem, model: key.model}), size: size, v: resized(old.v, 2*size),
		leafVer: resized(old.leafVer, len(tl.nodes)), seen: len(tl.changes)}
	for v := size + len(tl.nodes); v < 2*size; v++ {
		t.v[v] = t.v[v][:0] // leaves past the last node stay empty
	}
	for ni := range tl.nodes {
		tl.leaf(t, ni)
	}
	for v := size - 1; v >= 1; v-- {
		tl.merge(t, v)
	}
	return t
}

// leaf recomputes node ni's staircase in t and says whether it changed.
func (tl *timelines) leaf(t *stairTree, ni int) bool {
	ix := &tl.index
	stairs, usable := tl.nodeStairs(t.bundle, t.key.sem, ni)
	k := t.key.k
	if k == 0 {
		k = bits.OnesCount64(usable)
	}
	t.leafVer[ni] = tl.nodes[ni].ver
	next := ix.spare[:0]
	if k >= 1 && k <= len(stairs) {
		next = append(next, stairs[k-1]...)
	}
	return ix.set(t, t.size+ni, next)
}

// merge recomputes inner vertex v from its children and says whether it
// changed.
func (tl *timelines) merge(t *stairTree, v int) bool {
	return tl.index.set(t, v, minStairs(t.v[2*v], t.v[2*v+1], tl.index.spare))
}

// set stores next as vertex v unless it equals the vertex's value, keeping
// the old value's memory as the next scratch.
func (ix *nodeIndex) set(t *stairTree, v int, next staircase) bool {
	if slices.Equal(next, t.v[v]) {
		ix.spare = next
		return false
	}
	t.v[v], ix.spare = next, t.v[v]
	return true
}

// minStairs appends the pointwise minimum of two staircases to out[:0].
func minStairs(a, b, out staircase) staircase {
	out = out[:0]
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		l, v := int64(never), int64(never)
		if i < len(a) {
			l, v = a[i].len, a[i].start
		}
		if j < len(b) {
			l, v = min(l, b[j].len), min(v, b[j].start)
		}
		if m := len(out); m > 0 && out[m-1].start == v {
			out[m-1].len = l
		} else {
			out = append(out, step{len: l, start: v})
		}
		if i < len(a) && a[i].len == l {
			i++
		}
		if j < len(b) && b[j].len == l {
			j++
		}
	}
	return out
}

// search visits, earliest bound first along each path, every node whose
// lower bound for duration d is at most the bound; visit returns the bound
// from then on (it tightens as better placements are found).
func (t *stairTree) search(d, bound int64, visit func(ni int, lb int64) int64) {
	var stack [64]vertexAt
	stack[0] = vertexAt{lb: t.v[1].at(d), v: 1}
	n := 1
	for n > 0 {
		n--
		top := stack[n]
		if top.lb > bound {
			continue
		}
		if top.v >= t.size {
			bound = visit(top.v-t.size, top.lb)
			continue
		}
		// Push the later child first so that the earlier is searched first.
		l := vertexAt{lb: t.v[2*top.v].at(d), v: 2 * top.v}
		r := vertexAt{lb: t.v[2*top.v+1].at(d), v: 2*top.v + 1}
		if r.lb < l.lb {
			l, r = r, l
		}
		stack[n], stack[n+1] = r, l
		n += 2
	}
}

// ascending visits nodes in the order of their lower bounds for duration
// d, earliest first (ties by node), until yield returns false.
func (t *stairTree) ascending(d int64, yield func(ni int, lb int64) bool) {
	h := append(t.heap[:0], vertexAt{lb: t.v[1].at(d), v: 1})
	defer func() { t.heap = h[:0] }() // the next search reuses the memory
	for len(h) > 0 {
		top := h.pop()
		for {
			if top.lb == never {
				return
			}
			if top.v >= t.size {
				break
			}
			// Of the two children, the earlier would be popped next unless
			// the heap holds something earlier still: go down to it
			// without the push and the pop.
			l := vertexAt{lb: t.v[2*top.v].at(d), v: 2 * top.v}
			r := vertexAt{lb: t.v[2*top.v+1].at(d), v: 2*top.v + 1}
			if r.less(l) {
				l, r = r, l
			}
			h.push(r)
			if h[0].less(l) {
				h.push(l)
				top = h.pop()
			} else {
				top = l
			}
		}
		if !yield(top.v-t.size, top.lb) {
			return
		}
	}
}

type vertexAt struct {
	lb int64
	v  int
}

// vertexHeap is a binary min-heap by (lb, v).
type vertexHeap []vertexAt

func (a vertexAt) less(b vertexAt) bool { return a.lb < b.lb || (a.lb == b.lb && a.v < b.v) }

func (h *vertexHeap) push(x vertexAt) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].less(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *vertexHeap) pop() vertexAt {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].less(a[m]) {
			m = l
		}
		if r < n && a[r].less(a[m]) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// resized returns s with length n, reusing its memory when it is large
// enough; the elements' values are left for the caller to overwrite.
func resized[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return append(s[:cap(s)], make(S, n-cap(s))...)
	}
	return s[:n]
}
