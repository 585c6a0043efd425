package agent

import (
	"errors"
	"os"
	"syscall"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// Foreign processes: a process gpucal did not start on a GPU that an open
// window holds, run by someone other than the window's owner. The server
// hears of each from the heartbeat and tells both people. When its policy
// says so (DesiredState.KillForeign, the server's --kill-foreign-processes,
// off by default) the agent also stops them: SIGTERM at the first
// heartbeat round inside the window, SIGKILL Timing.Term later if the
// process is still on the GPU. The policy is cached with the windows, so
// it holds while the server is unreachable. A process whose owner the
// agent cannot tell is reported, never signalled, and neither is the
// agent itself or PID 1.

// foreignKey names one process across PID reuse.
type foreignKey struct {
	pid   int
	ticks uint64 // its start time (/proc/PID/stat field 22)
}

// stopForeignLocked applies the policy to the processes of sample, owners
// being the gpucal jobs' processes. a.mu is held.
func (a *Agent) stopForeignLocked(sample gpu.Sample, owners map[int]int64) {
	if !a.killForeign || sample.Err != nil {
		clear(a.foreignTerm)
		return
	}
	now := a.now()
	open := map[string]core.Window{} // by GPU UUID
	for _, w := range a.windows {
		if !now.Before(w.Start) && now.Before(w.End) {
			for _, u := range w.GPUs {
				open[u] = w
			}
		}
	}
	seen := map[foreignKey]bool{}
	for _, d := range sample.Devices {
		w, ok := open[d.UUID]
		if !ok {
			continue
		}
		for _, p := range d.Processes {
			if _, ours := owners[p.PID]; ours || !p.OwnerKnown || p.Owner.User == w.Owner || p.PID <= 1 || p.PID == os.Getpid() {
				continue
			}
			st, err := run.ReadStat(p.PID)
			if err != nil || !st.Live() {
				continue
			}
			k := foreignKey{p.PID, st.StartTicks}
			seen[k] = true
			termed, sent := a.foreignTerm[k]
			switch {
			case !sent:
				a.signalForeign(p, d, w, syscall.SIGTERM)
				a.foreignTerm[k] = now
			case now.Sub(termed) >= a.timing.Term:
				a.signalForeign(p, d, w, syscall.SIGKILL)
			}
		}
	}
	for k := range a.foreignTerm {
		if !seen[k] {
			delete(a.foreignTerm, k)
		}
	}
}

// signalForeign sends sig to a foreign process and says so.
func (a *Agent) signalForeign(p gpu.Process, d gpu.Device, w core.Window, sig syscall.Signal) {
	err := syscall.Kill(p.PID, sig)
	if errors.Is(err, syscall.ESRCH) {
		return
	}
	log := a.log.With("pid", p.PID, "user", p.Owner.User, "gpu", d.UUID, "reservation", core.ReservationName(w.Reservation), "owner", w.Owner)
	if err != nil {
		log.Error("could not stop a process on a reserved GPU", "signal", signalName(sig), "error", err)
		return
	}
	a.metrics.foreign.WithLabelValues(signalName(sig)).Inc()
	log.Warn("stopping a process gpucal did not start on a reserved GPU (--kill-foreign-processes)", "signal", signalName(sig))
}
