// Package run runs one job on a node: the local mechanics the node agent
// uses once the server has told it to start or stop a job (issue 5, scopes
// 3 and 4). It knows nothing of the server, heartbeats or the plan; the
// agent feeds it a Spec and a StopPlan and reports what comes back.
//
// # Starting
//
// Start starts a job's command as the job's user, in a process group of its
// own (and a cgroup of its own where Spec.Cgroup names one, below), with
// the environment gpucal promises (docs/progress.md):
//
//   - a fixed base: PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin,
//     and HOME, USER and LOGNAME of the user the job runs as; nothing of the
//     agent's own environment leaks in;
//   - then the job's own variables (Spec.Env), which may override the base;
//   - then what gpucal sets: CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES
//     (the GPU UUIDs the plan gave the job, comma-separated, in order; empty
//     for a job without GPUs, so that it sees none), GPUCAL_JOB (and
//     GPUCAL_JOB_ID, the same), GPUCAL_SERVER, GPUCAL_JOB_TOKEN and GPUCAL_PROGRESS_FILE, and for a
//     gang spread over nodes GPUCAL_NODES (the nodes in rank order) and GPUCAL_NODE_RANK. Spec.Env may
//     not set these (nor any GPUCAL_ variable): core refuses them at submit,
//     and Start refuses them again, so that no other path hands a job
//     another job's GPUs.
//
// The program is looked up in the job's PATH, not the agent's. When the
// agent runs as root, the job runs as Spec.User with that user's group and
// supplementary groups; an agent that is not root runs jobs as itself only
// and refuses a job for another user with an error saying so.
//
// # Output and progress
//
// The job's stdout and stderr are both appended to Spec.LogPath (0640, in a
// directory made 0750 if missing), which the API serves. The job writes
// the file itself, through a descriptor it inherits: the agent does not sit
// on a pipe between the job and its log. The agent reads the file back
// every 200 ms into a progress.Parser, whose reports go to Spec.OnProgress,
// and reads the last of it and flushes the parser before Wait returns.
//
// When Spec.ProgressFile is set, Start creates that file empty, 0600 and
// owned by the user the job runs as (it follows no symbolic link there),
// and names it in GPUCAL_PROGRESS_FILE, so that the job can write its own
// progress (docs/progress.md section 2). The caller picks the path, makes
// its directory, reads the file and removes it.
//
// # Why a restarted agent does not kill its jobs
//
// Each job is its own process group (Setpgid), so a signal meant for the
// agent (a Ctrl-C, systemd stopping the agent's process only) does not
// reach it, and a drain signals the whole group, children included. There
// is deliberately no parent-death signal (Pdeathsig): an agent that is
// upgraded, restarted or crashes must leave its jobs running, and a job
// writes its log without the agent, so it does not die of a broken pipe
// either. The agent that comes back finds its jobs by their process groups
// and keeps enforcing the deadlines it persisted. (The systemd unit for
// the agent must therefore use KillMode=process.) Adopt is how: given the
// PID and the start time Process.StartTicks gave (which tells the PID from
// a later process the kernel gave it to), it returns a Process that Stop
// takes down its ladder as usual; its exit status is lost with the agent
// that was its parent.
//
// # Cgroups
//
// A process can leave its process group (setsid, a double fork into a new
// group); it cannot leave a cgroup unless it may write the cgroup files,
// which a job running as its owner may not. So when Spec.Cgroup names a
// cgroup v2 directory, Start creates it (mkdir, 0755; its parent must be a
// cgroup v2 directory the agent may write) and starts the job inside it
// with clone3 and CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD, Linux 5.7),
// so that nothing the job forks is ever outside. Where the kernel cannot
// (ENOSYS, E2BIG, EINVAL, EPERM or EOPNOTSUPP from the clone), the job
// starts as usual and its PID is written to cgroup.procs at once: what
// the job forks in that first moment (well under a millisecond, while
// Start returns) stays outside, and escapes if it also leaves the process
// group.
// When the cgroup cannot be made at all, or the job not put in it, the
// job runs in its process group only and Process.CgroupErr says why, for
// the agent to log; the job is not failed for it. Only membership,
// cgroup.kill and cpu.stat are needed, which every cgroup v2 directory
// has without controllers; memory.peak needs the memory controller
// enabled in the parent's cgroup.subtree_control, which is the caller's
// business.
//
// For a job with a cgroup, "gone" means both: no live process in its
// process group and none in its cgroup (cgroup.events says populated 0;
// zombies do not count). SIGTERM goes to the other processes of the
// cgroup too (once each: members of the group have it with the group),
// and at KillAt the whole cgroup is killed through cgroup.kill (Linux
// 5.14; before, each process cgroup.procs lists gets SIGKILL). The
// checkpoint signal stays with the process group: it is the job's own
// contract, and a process that never asked for it might die of it. Once
// the job is gone, Stop reads the cgroup's use one last time and removes
// it (rmdir, retried for up to 2 s while exiting processes linger;
// StopReport.CgroupErr says when it stays). Adopt takes the cgroup too
// (Orphan.Cgroup), and adopts a job whose first process and group are
// gone as long as its cgroup holds a live process; it removes the empty
// cgroup of a job that is all gone.
//
// The cgroup also counts what the job used: Process.Usage reads cpu.stat
// (user_usec and system_usec: the CPU time of every process that was ever
// in it, children nobody waited for included) and memory.peak (the most
// memory charged to it at once, page cache included, where the memory
// controller is enabled). A Result of a job with a cgroup takes its CPU
// time from there, and memory.peak as MaxRSS where there is one.
//
// # Stopping
//
// Process.Stop runs the enforcement ladder of a drain order: the
// checkpoint signal (SIGUSR1 unless the job asks for another) at
// CheckpointAt, SIGTERM at TermAt and SIGKILL at KillAt, each to the whole
// process group (and the cgroup, above), then waits until the job is
// gone — every process, including those that forked and outlived the
// first one. Times already past fire at once, so an agent restarted
// mid-drain passes the persisted times and does not grant fresh grace. A
// job that ends on its own ends the ladder. StopPlan.OnSent hears of each
// signal as it goes, so that an agent can write down which steps are
// taken. The StopReport says which signals went when, when the job was
// seen gone and the Margin left before the deadline. That the GPUs are
// empty too is for the agent to check with NVML afterwards. ReadStat and
// Processes read /proc for the agent: process groups, CPU time, memory
// and start times; CgroupOf says which cgroup a process is in. Once a
// job's process group has been seen empty it is signalled no more: its ID
// is free for the kernel to give to another group.
//
// # Limits
//
// Without a cgroup (none given, or none could be made), a job that leaves
// its process group (setsid, a double fork into a new group) escapes Stop,
// and the resource use in a Result covers the first process and the
// descendants it waited for. With one, a job running as root could still
// move a process out of its cgroup by writing cgroup.procs elsewhere; a
// job running as its owner cannot. Where the kernel lacks cgroup.kill,
// SIGKILL goes to each PID cgroup.procs listed a moment before, so a
// process that exits and whose PID is given to another process in between
// would have the other one killed (PIDs are reused only after wrapping
// around pid_max); a process forked in that moment is caught by the kill
// Stop repeats at every look until the cgroup is empty.
//
// The package is Linux only and imports the standard library and
// agent/progress; it is meant for the node agent.
package run
