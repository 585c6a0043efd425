package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// booking is a synthetic reservation: whole nodes held for [start, end),
// booked at booked, some hours ahead. Its size and times are drawn before
// the replay, the same for every policy; its nodes are chosen when it is
// booked, the way core's booking rules choose them then.
type booking struct {
	booked, start, end time.Duration
	want               int   // nodes
	first              int   // the node the search for free nodes starts at
	made               bool  // nodes were found
	nodes              []int // sorted
	// Set when the window opens: onTime when its GPUs were free once
	// whatever was there had been stopped, undisturbed when that stopped
	// no non-preemptible job.
	onTime, undisturbed bool
}

// The shape of synthetic bookings: booked 2 to 12 hours ahead, 1 to 4 hours
// long in quarter hours, one or two nodes' worth of 8 GPUs (whole nodes),
// never more than a quarter of the cluster.
const (
	minLead   = 2 * time.Hour
	leadRange = 10 * time.Hour
	minLength = time.Hour
	steps     = 13 // lengths 1h, 1h15m, …, 4h
	bookGPUs  = 8
)

// makeBookings draws booking requests as a Poisson process of rate per day
// over [0, span], deterministically from seed.
func makeBookings(span time.Duration, nodes, gpn int, rate float64, seed int64) []booking {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xb00c1d5))
	gap := func() time.Duration {
		d := -math.Log(1-rng.Float64()) * float64(24*time.Hour) / rate
		if d > float64(span) {
			return span + 1 // past the end: also keeps the conversion in range
		}
		return time.Duration(d)
	}
	var out []booking
	for t := gap(); t <= span; t += gap() {
		b := booking{booked: t.Truncate(time.Second)}
		b.start = (b.booked + minLead + time.Duration(rng.Int64N(int64(leadRange)))).Truncate(time.Minute)
		b.end = b.start + minLength + time.Duration(rng.IntN(steps))*15*time.Minute
		b.want = min((bookGPUs+gpn-1)/gpn*(1+rng.IntN(2)), max(1, nodes/4))
		b.first = rng.IntN(nodes)
		out = append(out, b)
	}
	return out
}

// book chooses booking b's nodes now, as core's booking rules would: whole
// nodes that no other window holds during b's window and on which no
// non-preemptible job is expected to run past b's start (preemptible jobs
// will be drained), searching from b.first onwards. It reports whether
// enough were found; if not, the booking is refused.
func (s *simulation) book(b *booking) bool {
	c := s.c
	for i := 0; i < c.nodes && len(b.nodes) < b.want; i++ {
		n := (b.first + i) % c.nodes
		if c.clear(n, b.start, b.end-b.start) && !s.heldPast(n, b.start) {
			b.nodes = append(b.nodes, n)
		}
	}
	if len(b.nodes) < b.want {
		b.nodes = nil
		return false
	}
	slices.Sort(b.nodes)
	b.made = true
	return true
}

// heldPast reports whether a non-preemptible job on node n is expected to
// hold its GPUs past t.
func (s *simulation) heldPast(n int, t time.Duration) bool {
	for g := n * s.c.gpn; g < (n+1)*s.c.gpn; g++ {
		if h := s.c.holder[g]; h >= 0 && !s.jobs[h].preemptible && s.busyUntil(int(h)) > t {
			return true
		}
	}
	return false
}

// busyUntil is when running job i is expected to free its GPUs, as the
// policy sees it: the true end for the oracle, the expected end for EASY
// and fifo, the conditional P90 end for gpucal (core's busyUntil).
func (s *simulation) busyUntil(i int) time.Duration {
	j := &s.jobs[i]
	switch s.cfg.Policy {
	case PolicySJF:
		return j.start + j.left
	case PolicyGPUCal:
		return max(s.now, j.start+running(j.est, s.now-j.start, j.requestLeft()).P90)
	}
	return max(s.now, j.start+j.expected)
}
