//go:build cgo

package nvmlreader

import (
	"math/rand/v2"
	"time"
)

// profile is how a simulated model behaves: its power envelope and clocks.
// The numbers are the public specifications, rounded.
type profile struct {
	idleW, maxW         float64
	idleSMMHz, maxSMMHz uint32
	memMHz              uint32
}

// simGPU is the state of one simulated GPU. Its readings move with time and
// with whether a fake job holds it, deterministically for a given seed and
// sequence of instants. The FakeReader's lock guards it.
type simGPU struct {
	profile  profile
	totalMiB uint64
	rng      *rand.Rand

	// What the agent said runs on it.
	busy    bool
	pid     int
	usedMiB uint64

	// Readings as of last.
	last        time.Time
	util        uint32
	memUtil     uint32
	powerW      float64
	temperature float64
	energyMJ    float64
	smMHz       uint32
}

func newSimGPU(p profile, totalMiB uint64, rng *rand.Rand) *simGPU {
	return &simGPU{
		profile:  p,
		totalMiB: totalMiB,
		rng:      rng,
		// As if the driver had been loaded a day ago at idle.
		energyMJ: p.idleW * 86400 * 1000,
		powerW:   p.idleW,
	}
}

// thermalLag is about how long the temperature takes to follow the power.
const thermalLag = time.Minute

// advance moves the readings to now: energy accumulates the power drawn
// since the last instant, utilisation and power follow the busy state with
// a little noise, and the temperature follows the power with a lag.
func (g *simGPU) advance(now time.Time) {
	dt := 0.0
	if !g.last.IsZero() && now.After(g.last) {
		dt = now.Sub(g.last).Seconds()
	}
	g.energyMJ += g.powerW * dt * 1000
	g.last = now

	noise := g.rng.Float64() // [0, 1)
	g.util, g.memUtil, g.smMHz = 0, 0, g.profile.idleSMMHz
	if g.busy {
		g.util = 90 + uint32(noise*10)
		g.memUtil = 30 + uint32(noise*25)
		g.smMHz = g.profile.maxSMMHz
	}
	p := g.profile
	load := float64(g.util) / 100
	g.powerW = p.idleW + 0.85*load*(p.maxW-p.idleW) + noise*5

	target := 30 + 45*(g.powerW-p.idleW)/(p.maxW-p.idleW)
	if g.temperature == 0 {
		g.temperature = target
	}
	g.temperature += (target - g.temperature) * min(1, dt/thermalLag.Seconds())
}

// memoryUsedMiB is the memory the fake job holds, never more than the GPU has.
func (g *simGPU) memoryUsedMiB() uint64 {
	if !g.busy {
		return 0
	}
	return min(g.usedMiB, g.totalMiB)
}
