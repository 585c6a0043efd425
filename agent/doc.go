// Package agent is the node agent's main loop (issue 5; DESIGN.md §3
// decision 4 and §5 "Enforcement"): it reports its node to the server,
// starts and stops the jobs the server wants there, ships their logs, and
// keeps reserved windows free of preemptible jobs even while the server
// cannot be reached. cmd/gpucal wires it: New(Config), then Run(ctx) next
// to the GPU Sampler and exporter (Labels gives the exporter its job
// labels). It imports core for the wire types only, agent/gpu, agent/run
// and agent/progress, and builds without cgo.
//
// # The loop
//
// The protocol is level-triggered (core.Heartbeat, core.DesiredState).
// Every interval (Config.Interval, then the server's DesiredState.Interval),
// and at once when a job ends, Run sends the whole state of the node:
//
//   - the GPUs of the Sampler's latest sample (the caller runs the
//     Sampler), with each GPU process marked with the job it belongs to —
//     the job whose first process it is, whose process group it is in
//     (/proc/PID/stat), whose cgroup it is in (/proc/PID/cgroup), or which
//     it was seen as before — and the GPU's
//     Fault, if the agent found one; a failed read is Heartbeat.NVML;
//   - every job it has not been told to forget: running, draining (its
//     stop ladder has begun), exited (its process group is gone) or
//     refused (it could not be started), with its PID, times, exit status,
//     why it was stopped and the margin left before the deadline, CPU time
//     and peak memory of its processes (its cgroup's count where it has
//     one: every process, waited for or not), mean GPU utilisation and
//     peak GPU memory over the samples, its latest progress (from its progress
//     file, else from its log), and, once it has exited and all of its log
//     is shipped, the log's size;
//   - the round trip of the previous heartbeat.
//
// The answer is applied in three steps: (1) take the interval, the drain
// timing and the windows (cached), and forget the jobs in Ack; (2) start
// each job in Run the agent has no record of; (3) stop jobs, as below. A
// heartbeat without an answer (the server is down, or answered for another
// node) changes nothing but step 3's cached part; the loop retries at the
// next interval and never stops for the server's errors.
//
// # Starting
//
// A job is started with run.Start: its command as its user, in a process
// group of its own and, with a cgroup root, in the cgroup
// <CgroupRoot>/<node>/j<ID> (below), CUDA_VISIBLE_DEVICES set to the order's GPU
// UUIDs, GPUCAL_JOB "j<ID>", GPUCAL_SERVER, GPUCAL_JOB_TOKEN (the order's
// Token, when it has one), GPUCAL_PROGRESS_FILE (below), GPUCAL_NODES and
// GPUCAL_NODE_RANK for a gang, output appended to LogDir/j<ID>.log. The
// token is a secret: it is kept with the order in the state file and
// never logged. A GPU that is not on the node
// (by the latest successful read), or any error of run.Start, makes the job
// refused, with the error. A job ID is started at most once: the order is
// written down (as "starting") before the process starts, finished jobs are
// kept until the server acknowledges them, and the last 4096 acknowledged
// IDs are remembered after that. An agent that finds a job still "starting"
// after a restart reports it exited with exit code -1 rather than start it
// again.
//
// # Stopping
//
// Each running job has at most one stop order in force, with absolute
// times: the earliest, by deadline, of
//
//   - the server's StopOrder for it;
//   - for a job in neither Run nor Stop, Timing.Ladder(job, "unknown",
//     now+Timing.Grace, now);
//   - the local rule over the cached windows: a preemptible job whose GPUs
//     intersect a window that is not its own reservation's, that opens
//     after the job started and has not ended, gets Timing.Ladder(job,
//     "drain", window start, now) for the earliest such window. The rule is
//     applied on every answer and every failed heartbeat alike, so the
//     server (whose plan follows the same rule) and the agent agree. A job
//     started inside an already-open window is stopped by server orders
//     only.
//
// A later, earlier order replaces the one in force; an order whose ladder
// has not begun is dropped when the server no longer asks for it, and one
// whose ladder has begun is carried through. The ladder begins at its
// first step (the job is then reported draining) and is run.Process.Stop:
// the checkpoint signal (the order's Checkpoint name, SIGUSR1 by default),
// SIGTERM and SIGKILL to the process group at their times (TERM and KILL
// to the job's cgroup as well), until no process of the group or the
// cgroup is left. When a job's first process ends by itself, what it left
// in its group and its cgroup gets SIGTERM at once and SIGKILL 10 s later
// (or at the order's kill time, if sooner); the job ended by itself. Once
// the job is gone its cgroup is removed.
//
// Once the group is gone the agent reads the GPUs (Sampler.Refresh) until
// none of the job's processes (its first process and any PID seen on its
// GPUs as its) is on its GPUs, for up to 10 s, and only then reports the
// job exited: the GPUs are free only when NVML shows no process. A process
// still there sets that GPU's Fault ("process N outlived SIGKILL of jN")
// until it is gone. A drain counts as clean (gone by the deadline), late or
// failed (a process outlived it on a GPU, or a signal could not be sent).
//
// # Persistence
//
// StateDir/state.json (0600, in a 0700 directory, or 0711 for a root
// agent that runs jobs as their owners and keeps the progress files
// there, so that the owners can pass through to them and list nothing)
// holds every job record — the order (its job token included), its
// progress file, PID and the start time /proc gives it (field 22, to tell
// the PID from a reused one), its cgroup, how it ended, the stop order in
// force with its absolute times, whether its ladder has begun and which
// steps fired, its resource use, progress and the bytes of its log
// shipped — and the acknowledged IDs, cached windows, drain timing and
// GPU faults. It is written whole to a temporary file that is then renamed, when a job is
// admitted, started, signalled or ended and after each loop round that
// changed anything, so an agent killed at any moment (kill -9 included)
// finds a consistent state. Run's return stops nothing: jobs outlive the
// agent by design. A restarted agent adopts each job whose process group
// or cgroup is still alive (run.Adopt) — its exit status is then unknown,
// reported as -1 with an Error saying the agent was restarted — and
// resumes its ladder with the persisted times, skipping the steps that
// already fired: no fresh grace. A job whose group and cgroup are gone is
// reported exited, status unknown.
//
// # Logs and progress
//
// A separate loop ships each job's log every second with Conn.AppendLog,
// in chunks of at most 256 KiB read from the file (never the whole file),
// at most 4 MiB per job per round, from the offset the server has. When
// the server says it has another size (LogOffsetError) the agent resumes
// from there. Shipping goes on after the job ends until the file is all
// shipped, even after the server acknowledged the job. Progress bars in
// the log (agent/progress, read by run) are kept as the latest
// ProgressReport: a plain bar as step of total, else the fraction of the
// whole job; a fraction of the current epoch only is left out.
//
// Each job also gets a progress file, ProgressDir/j<ID>
// (StateDir/progress/j<ID> by default), named in GPUCAL_PROGRESS_FILE
// (docs/progress.md section 2). The directory is 0711 and the agent's; the
// file is made empty before the job starts, 0600, owned by the user the
// job runs as (by the agent when it runs the job as itself). The path is
// written down with the job, so a restarted agent reads the same file. A
// loop reads the running jobs' files every second, only those whose inode,
// size or modification time changed (or that changed in the last second),
// and only their last 4 KiB, following no symbolic link, with
// progress.ParseFile; the file is read once more when the job ends, before
// it is reported exited. Its first valid report makes the file win: from
// then on the job's progress is the file's latest valid report, and bars
// in its log no longer count (a job that writes the file knows better).
// An empty file, or none, is no progress yet; a line that is not progress
// is logged once per distinct error, with the job, and changes nothing.
// The file is removed when the job's record is forgotten, after the server
// acknowledged its end (or when it was never started). A job running as
// its owner under a root agent cannot create files in the directory, so it
// rewrites or appends to its file rather than renaming a new one over it.
//
// # Cgroups
//
// A process that leaves its job's process group (setsid, a double fork)
// would escape a stop; a cgroup per job closes that gap, and counts the
// CPU time and memory of all of the job's processes. Config.CgroupRoot is
// the cgroup v2 directory the jobs' cgroups go under, <root>/<node>/j<ID>; ""
// turns cgroups off. New makes the root if missing (its deepest existing
// ancestor must be a cgroup v2 directory), enables the memory and cpu
// controllers down to it where the kernel allows (memory.peak needs
// memory; membership, cgroup.kill and cpu.stat need none), checks that it
// can make a cgroup there, and logs once which it is: cgroups under the
// root (and whether they get memory.peak), or process groups only, with
// the reason. A job whose own cgroup cannot be made still runs, in its
// process group only: the first such job is a warning, later ones debug
// lines. Each job's record keeps its cgroup path, so that a restarted
// agent adopts the job by it, even one whose first process is gone.
//
// DefaultCgroupRoot picks the root for cmd/gpucal. cgroup v2 lets a cgroup
// that holds processes hand no controller down to its children ("no
// internal processes"), and the agent must hold none of its own in the
// cgroup above its jobs if they are to get memory.peak. It reads the
// cgroup v2 mount from /proc/self/mountinfo (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid system) and the agent's own cgroup
// from /proc/self/cgroup (0::/path), then takes the first of these it can
// prepare:
//
//  1. <delegated>/jobs, where <delegated> is the cgroup systemd delegated
//     to the agent's unit (Delegate=yes; systemd ≥ 251 marks it with the
//     trusted.delegate extended attribute, a user manager with
//     user.delegate): the agent's own cgroup, or its parent when the
//     agent's own is an unmarked leaf below it. With DelegateSubgroup=agent
//     (systemd ≥ 254) the agent runs in <unit>/agent, the unit's cgroup
//     holds no process, and the jobs get controllers; with Delegate=yes
//     alone the agent shares the unit's cgroup, and the jobs get
//     membership, cgroup.kill and cpu.stat but no memory.peak. An agent
//     that is not root and may write its own cgroup takes that as
//     delegated.
//  2. <mount>/gpucal, at the top of the hierarchy: for a root agent that
//     nothing delegated to (no systemd, a container, an older systemd).
//     It is outside every systemd unit, so a stopped or restarted agent's
//     unit leaves the jobs alone whatever its KillMode.
//
// It returns "" when it can prepare neither; the jobs then get process
// groups only. The unit keeps KillMode=process either way, so that the
// jobs, in the unit's cgroup under (1), outlive an agent restart.
//
// # Foreign processes
//
// A process no job started, on a GPU an open window holds, run by someone
// other than the window's owner, is reported (the server tells both). With
// the server's policy on (DesiredState.KillForeign, cached like the
// windows) the agent also stops it: SIGTERM at the first round inside the
// window, SIGKILL Timing.Term later. A process whose owner cannot be told,
// PID 1 and the agent itself are never signalled (foreign.go).
//
// # Metrics
//
// With Config.Registerer: gpucal_agent_heartbeat_seconds (round trips),
// gpucal_agent_heartbeat_failures_total, gpucal_agent_drains_total{result}
// (clean, late, failed), gpucal_agent_jobs{state} and
// gpucal_agent_foreign_signals_total{signal}.
package agent
