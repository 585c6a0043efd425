package agent

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
	"github.com/gpucal/gpucal/agent/run"
	"github.com/gpucal/gpucal/core"
)

// heartbeat reports the node: its GPUs as last read and every job the
// server has not acknowledged. On the way it counts the sample into the
// running jobs' GPU use, and reads their processes' CPU time and memory.
func (a *Agent) heartbeat() core.Heartbeat {
	groups := groupUse()     // before the lock: it reads all of /proc
	usage := a.cgroupUsage() // and the running jobs' cgroups
	a.mu.Lock()
	defer a.mu.Unlock()
	// The sample is taken under the lock, so that a job reported exited
	// comes with a sample read after its GPUs were checked (finish).
	sample := a.sampler.Latest()
	owners := a.ownersLocked(sample.Devices, groups)
	a.accountLocked(sample, groups, usage, owners)
	a.clearFaultsLocked(sample)
	a.stopForeignLocked(sample, owners)

	hb := core.Heartbeat{Node: a.name, Agent: a.version, Latency: a.latency, GPUs: []core.GPUReport{}, Jobs: []core.JobReport{}}
	if sample.Err != nil {
		hb.NVML = sample.Err.Error()
	}
	for _, d := range sample.Devices {
		hb.GPUs = append(hb.GPUs, gpuReport(d, owners, a.faults[d.UUID].Text))
	}
	counts := map[core.RunState]int{}
	for _, id := range a.jobIDsLocked() {
		j := a.jobs[id]
		if j.rec.Acked || j.rec.Phase == phaseStarting {
			continue
		}
		r := jobReport(j.rec)
		counts[r.State]++
		hb.Jobs = append(hb.Jobs, r)
	}
	for _, s := range reportedStates {
		a.metrics.jobs.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
	return hb
}

// groups is what /proc says about process groups, by group ID, and which
// group each process is in.
type groups struct {
	use  map[int]groupTotal // by process group ID
	pgid map[int]int        // by PID
}

// groupTotal is the CPU time and resident memory of a group's live
// processes.
type groupTotal struct {
	cpu time.Duration
	rss int64
}

// groupUse reads /proc once; nil maps when it cannot.
func groupUse() groups {
	procs, err := run.Processes()
	if err != nil {
		return groups{}
	}
	g := groups{use: map[int]groupTotal{}, pgid: make(map[int]int, len(procs))}
	for _, p := range procs {
		g.pgid[p.PID] = p.PGID
		if p.Live() {
			t := g.use[p.PGID]
			t.cpu += p.CPU
			t.rss += p.RSS
			g.use[p.PGID] = t
		}
	}
	return g
}

// cgroupUsage reads the cgroups of the running jobs that have one, by
// job ID.
func (a *Agent) cgroupUsage() map[int64]run.Usage {
	a.mu.Lock()
	procs := map[int64]*run.Process{}
	for id, j := range a.jobs {
		if j.rec.Phase == phaseRunning && j.proc != nil && j.rec.Cgroup != "" {
			procs[id] = j.proc
		}
	}
	a.mu.Unlock()
	usage := make(map[int64]run.Usage, len(procs))
	for id, p := range procs {
		if u, ok := p.Usage(); ok {
			usage[id] = u
		}
	}
	return usage
}

// ownersLocked tells which job each GPU process belongs to: the job whose
// first process it is, whose process group it is in, whose cgroup it is
// in (a process that left the group), or which it was seen as before (a
// process may outlive its group on a GPU). a.mu is held.
func (a *Agent) ownersLocked(devices []gpu.Device, g groups) map[int]int64 {
	leaders, seen, cgroups := map[int]int64{}, map[int]int64{}, map[string]int64{}
	for id, j := range a.jobs {
		if j.rec.Phase != phaseRunning && j.rec.Phase != phaseChecking {
			continue
		}
		leaders[j.rec.PID] = id
		for _, p := range j.rec.GPUPIDs {
			seen[p] = id
		}
		// /proc/PID/cgroup names a cgroup by its path below the mount.
		if rel, ok := strings.CutPrefix(j.rec.Cgroup, a.cgroupMount); ok && j.rec.Cgroup != "" && a.cgroupMount != "" {
			cgroups[rel] = id
		}
	}
	owners := map[int]int64{}
	for _, d := range devices {
		for _, p := range d.Processes {
			if id, ok := leaders[p.PID]; ok {
				owners[p.PID] = id
			} else if pgid, ok := g.pgid[p.PID]; ok && leaders[pgid] != 0 {
				owners[p.PID] = leaders[pgid]
			} else if id, ok := cgroupOwner(cgroups, p.PID); ok {
				owners[p.PID] = id
			} else if id, ok := seen[p.PID]; ok {
				owners[p.PID] = id
			}
		}
	}
	return owners
}

// cgroupOwner finds the job whose cgroup process pid is in, among
// cgroups (job by path below the mount).
func cgroupOwner(cgroups map[string]int64, pid int) (int64, bool) {
	if len(cgroups) == 0 {
		return 0, false
	}
	path, err := run.CgroupOf(pid)
	if err != nil {
		return 0, false
	}
	id, ok := cgroups[path]
	return id, ok
}

// accountLocked adds what the running jobs use: CPU time and memory from
// /proc and from the jobs' cgroups (usage, by job) at every heartbeat,
// GPU utilisation and memory once per sample, and the GPU processes seen
// as theirs. a.mu is held.
func (a *Agent) accountLocked(s gpu.Sample, g groups, usage map[int64]run.Usage, owners map[int]int64) {
	fresh := s.Err == nil && !s.At.IsZero() && !s.At.Equal(a.sampleAt)
	if fresh {
		a.sampleAt = s.At
	}
	for id, j := range a.jobs {
		r := &j.rec
		if r.Phase != phaseRunning {
			continue
		}
		if t, ok := g.use[r.PID]; ok {
			r.CPUSeconds = max(r.CPUSeconds, t.cpu.Seconds())
			r.MaxRSS = max(r.MaxRSS, t.rss)
		}
		if u, ok := usage[id]; ok { // every process of the job, waited for or not
			r.CPUSeconds = max(r.CPUSeconds, u.CPU().Seconds())
			r.MaxRSS = max(r.MaxRSS, u.MemoryPeak)
		}
		for pid, owner := range owners {
			if owner == id && !slices.Contains(r.GPUPIDs, pid) && len(r.GPUPIDs) < maxGPUPIDs {
				r.GPUPIDs = append(r.GPUPIDs, pid)
				a.dirty = true
			}
		}
		if !fresh || len(r.Order.GPUs) == 0 {
			continue
		}
		var util float64
		var n int
		var mem int64
		for _, d := range s.Devices {
			if !slices.Contains(r.Order.GPUs, d.UUID) {
				continue
			}
			if d.Has(gpu.FieldGPUUtil) {
				util += float64(d.GPUUtil)
				n++
			}
			if d.Has(gpu.FieldMemory) {
				mem += int64(d.MemoryUsedMiB)
			}
		}
		if n > 0 {
			r.UtilSum += util / float64(n)
			r.UtilSamples++
		}
		r.GPUMemMiB = max(r.GPUMemMiB, mem)
	}
}

// clearFaultsLocked drops the fault of a GPU once the process that caused
// it is no longer on it. a.mu is held.
func (a *Agent) clearFaultsLocked(s gpu.Sample) {
	if s.Err != nil {
		return
	}
	for uuid, f := range a.faults {
		i := slices.IndexFunc(s.Devices, func(d gpu.Device) bool { return d.UUID == uuid })
		if i < 0 || slices.ContainsFunc(s.Devices[i].Processes, func(p gpu.Process) bool { return p.PID == f.PID }) {
			continue
		}
		delete(a.faults, uuid)
		a.dirty = true
		a.log.Info("the process that kept a GPU faulty is gone", "gpu", uuid, "pid", f.PID, "job", core.JobName(f.Job))
	}
}

// gpuReport is one GPU's part of a heartbeat; readings the GPU does not
// provide are left 0.
func gpuReport(d gpu.Device, owners map[int]int64, fault string) core.GPUReport {
	g := core.GPUReport{Index: d.Index, UUID: d.UUID, Name: d.Name, Fault: fault}
	if d.Has(gpu.FieldMemory) {
		g.MemoryMiB, g.UsedMiB = int64(d.MemoryTotalMiB), int64(d.MemoryUsedMiB)
	}
	if d.Has(gpu.FieldGPUUtil) {
		g.Util = float64(d.GPUUtil)
	}
	if d.Has(gpu.FieldTemperature) {
		g.TempC = float64(d.TemperatureC)
	}
	if d.Has(gpu.FieldPower) {
		g.PowerW = d.PowerW
	}
	if d.Has(gpu.FieldXID) {
		g.XID = d.LastXID
	}
	for _, p := range d.Processes {
		pr := core.ProcessReport{PID: p.PID, Job: owners[p.PID]}
		if p.UsedKnown {
			pr.UsedMiB = int64(p.UsedMiB)
		}
		if p.OwnerKnown {
			pr.User = p.Owner.User
			if pr.User == "" {
				pr.User = strconv.Itoa(p.Owner.UID)
			}
		}
		g.Processes = append(g.Processes, pr)
	}
	return g
}

// jobReport is one job's part of a heartbeat. How it ended, and its log
// size, are reported once it has exited: the log size only once all of
// the log is shipped, so that the server knows the log is complete.
func jobReport(r record) core.JobReport {
	rep := core.JobReport{
		Job: r.Order.Job, PID: r.PID, StartedAt: r.StartedAt,
		CPUSeconds: r.CPUSeconds, MaxRSS: r.MaxRSS, GPUMemMiB: r.GPUMemMiB,
		Stopped: r.Stopped,
	}
	if r.UtilSamples > 0 {
		rep.GPUUtil = r.UtilSum / float64(r.UtilSamples)
	}
	if r.Progress != nil {
		p := *r.Progress
		rep.Progress = &p
	}
	switch {
	case r.Phase == phaseRefused:
		rep.State, rep.PID, rep.EndedAt, rep.Error = core.RunRefused, 0, r.EndedAt, r.Error
	case r.Phase == phaseExited:
		rep.State, rep.EndedAt, rep.ExitCode, rep.Signal, rep.Error = core.RunExited, r.EndedAt, r.ExitCode, r.Signal, r.Error
		if r.Margin != nil {
			m := *r.Margin
			rep.Margin = &m
		}
		if r.LogDone {
			rep.LogSize, rep.LogDone = r.LogShipped, true
		}
	case r.Begun:
		rep.State = core.RunDraining
		if r.Stop != nil {
			rep.Deadline, rep.Reservation = r.Stop.Deadline, r.Stop.Reservation
		}
	default:
		rep.State = core.RunRunning
	}
	return rep
}
