package sim

import (
	"cmp"
	"slices"
	"time"
)

// window is a booked window [start, end) on one node, as the policies see it
// once it has been booked.
type window struct {
	start, end time.Duration
	booking    int // index into simulation.bookings
}

// cluster is the simulated machine room: which job holds each GPU and which
// windows are booked on each node. GPU i sits on node i / gpn.
type cluster struct {
	nodes, gpn int
	holder     []int32 // per GPU: the index of the job holding it, or -1
	free       []int   // per node: GPUs nobody holds
	withFree   []int   // withFree[f]: nodes with exactly f free GPUs
	totalFree  int
	windows    [][]window // per node: booked windows not yet over, by start
	booked     int        // windows in all of windows
}

func newCluster(nodes, gpn int) *cluster {
	c := &cluster{nodes: nodes, gpn: gpn, holder: make([]int32, nodes*gpn), free: make([]int, nodes),
		withFree: make([]int, gpn+1), totalFree: nodes * gpn, windows: make([][]window, nodes)}
	for i := range c.holder {
		c.holder[i] = -1
	}
	for n := range c.free {
		c.free[n] = gpn
	}
	c.withFree[gpn] = nodes
	return c
}

// nodesFor is how many whole nodes a job of g GPUs takes (1 when it fits one node).
func (c *cluster) nodesFor(g int) int {
	if g <= c.gpn {
		return 1
	}
	return (g + c.gpn - 1) / c.gpn
}

func (c *cluster) setFree(n, f int) {
	c.withFree[c.free[n]]--
	c.totalFree += f - c.free[n]
	c.free[n] = f
	c.withFree[f]++
}

// take gives gpus to job j; release gives them back.
func (c *cluster) take(j int, gpus []int32) {
	for _, g := range gpus {
		c.holder[g] = int32(j)
		n := int(g) / c.gpn
		c.setFree(n, c.free[n]-1)
	}
}

func (c *cluster) release(gpus []int32) {
	for _, g := range gpus {
		c.holder[g] = -1
		n := int(g) / c.gpn
		c.setFree(n, c.free[n]+1)
	}
}

// maxFree is the largest number of free GPUs on one node.
func (c *cluster) maxFree() int {
	for f := c.gpn; f > 0; f-- {
		if c.withFree[f] > 0 {
			return f
		}
	}
	return 0
}

// mightFit is a cheap necessary condition for fitNow.
func (c *cluster) mightFit(g int) bool {
	if g <= c.gpn {
		return c.maxFree() >= g
	}
	return c.withFree[c.gpn] >= c.nodesFor(g)
}

// book adds a window to node n; unbook removes the window of booking b.
func (c *cluster) book(n int, w window) {
	i, _ := slices.BinarySearchFunc(c.windows[n], w, func(a, b window) int { return cmp.Compare(a.start, b.start) })
	c.windows[n] = slices.Insert(c.windows[n], i, w)
	c.booked++
}

func (c *cluster) unbook(n, b int) {
	before := len(c.windows[n])
	c.windows[n] = slices.DeleteFunc(c.windows[n], func(w window) bool { return w.booking == b })
	c.booked -= before - len(c.windows[n])
}

// clear reports whether a non-preemptible job may hold node n's GPUs for
// [from, from+d): no booked window on n overlaps it.
func (c *cluster) clear(n int, from, d time.Duration) bool {
	to := from + max(d, 1)
	for _, w := range c.windows[n] {
		if w.start >= to {
			return true
		}
		if from < w.end {
			return false
		}
	}
	return true
}

// pushPast returns the earliest t ≥ from at which node n has no window in
// [t, t+d). Windows on one node never overlap, so one pass suffices.
func (c *cluster) pushPast(n int, from, d time.Duration) time.Duration {
	t := from
	for _, w := range c.windows[n] {
		if w.end > t && w.start < t+max(d, 1) {
			t = w.end
		}
	}
	return t
}

// fitNow places a job of g GPUs at now for an expected d, best fit, or
// returns nil. A job that fits one node goes on the node it leaves with the
// fewest free GPUs; a larger one needs wholly free nodes, the lowest-numbered
// first, and like core.Planner uses only the GPUs it asked for on the last. Non-preemptible jobs avoid nodes with a window in [now, now+d);
// preemptible ones may use any free GPU (they are drained when a window
// opens, and may borrow an open window's idle GPUs). GPUs marked in
// exclude are left alone.
func (c *cluster) fitNow(now time.Duration, g int, d time.Duration, preemptible bool, exclude []bool) []int32 {
	if !c.mightFit(g) {
		return nil
	}
	usable := func(n int) int {
		f := c.free[n]
		if f == 0 || (!preemptible && !c.clear(n, now, d)) {
			return 0
		}
		if exclude != nil {
			for i := n * c.gpn; i < (n+1)*c.gpn; i++ {
				if exclude[i] && c.holder[i] < 0 {
					f--
				}
			}
		}
		return f
	}
	if g <= c.gpn {
		best, bestFree := -1, c.gpn+1
		for n := range c.nodes {
			if c.free[n] < g || (exclude == nil && c.free[n] >= bestFree) {
				continue // without exclusions, usable is free or 0
			}
			if f := usable(n); f >= g && f < bestFree {
				best, bestFree = n, f
			}
		}
		if best < 0 {
			return nil
		}
		return c.pick(best, g, exclude)
	}
	k := c.nodesFor(g)
	var gpus []int32
	for n := 0; n < c.nodes && k > 0; n++ {
		if c.free[n] == c.gpn && usable(n) == c.gpn {
			gpus = append(gpus, c.pick(n, c.gpn, exclude)...)
			k--
		}
	}
	if k > 0 {
		return nil
	}
	return gpus[:g] // as the planner does: the last node may keep GPUs for others
}

// pick returns the lowest-indexed g free, non-excluded GPUs of node n.
func (c *cluster) pick(n, g int, exclude []bool) []int32 {
	gpus := make([]int32, 0, g)
	for i := n * c.gpn; i < (n+1)*c.gpn && len(gpus) < g; i++ {
		if c.holder[i] < 0 && (exclude == nil || !exclude[i]) {
			gpus = append(gpus, int32(i))
		}
	}
	return gpus
}
