package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gpucal/gpucal/agent/progress"
)

// followEvery is how often the agent reads what a running job appended to
// its log, for progress.
const followEvery = 200 * time.Millisecond

// Spec is one job to start on this node.
type Spec struct {
	Command []string          // the program and its arguments; the program is looked up in the job's PATH
	Env     map[string]string // the job's own variables, on top of the base; no GPUCAL_* nor *_VISIBLE_DEVICES
	WorkDir string            // the working directory; "" is the agent's
	// User is who the job runs as; "" is the agent's user. Another user
	// needs an agent running as root.
	User string
	// MinUID is the lowest user ID a job runs as when the agent is root
	// (DefaultMinUID when 0): never root or a system account.
	MinUID   int
	GPUs     []string // GPU UUIDs, in order: CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES
	JobID    string   // GPUCAL_JOB, e.g. "j42"; set only when not ""
	Server   string   // GPUCAL_SERVER, set only when not ""
	JobToken string   // GPUCAL_JOB_TOKEN, set only when not ""
	// ProgressFile is GPUCAL_PROGRESS_FILE, set only when not "". Start
	// creates it empty (emptying one left there), 0600, owned by the user
	// the job runs as, so that the job can write it; its directory must
	// exist and let that user through. Reading it is the caller's business.
	ProgressFile string
	// Nodes are the nodes of a gang in rank order and Rank is this node's:
	// GPUCAL_NODES (comma-separated) and GPUCAL_NODE_RANK, set only when
	// Nodes is not empty.
	Nodes []string
	Rank  int
	// LogPath is the file the job's stdout and stderr are appended to. It
	// is created 0640, its directory 0750, owned by the agent.
	LogPath string
	// OnProgress, if not nil, is called with each report read from the
	// job's output, from one goroutine at a time. It must not block long.
	OnProgress func(progress.Report)
	// Cgroup, when not "", is a cgroup v2 directory to create (0755) for
	// the job, e.g. /sys/fs/cgroup/gpucal/jobs/j42: the job starts inside
	// it, Stop kills all of it and removes it once empty, and the job's
	// resource use is the cgroup's. Its parent must be a cgroup v2
	// directory the agent may write. A job whose cgroup cannot be made
	// runs without one; Process.CgroupErr says why.
	Cgroup string
}

// Result is how a job's process ended.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal is the signal that ended the process, 0 when it exited.
	Signal syscall.Signal
	// Started and Ended are when the process started and when the agent
	// saw it end.
	Started, Ended time.Time
	// UserTime, SystemTime and MaxRSS (bytes) are the process's resource
	// use, and that of the descendants it waited for. For a job in a
	// cgroup, they are what the cgroup counted when the first process
	// ended (Usage): CPU time of every process of the job so far, waited
	// for or not, and memory.peak as MaxRSS where the cgroup has it.
	UserTime, SystemTime time.Duration
	MaxRSS               int64
}

// Process is a started job.
type Process struct {
	pid        int
	startTicks uint64        // when it started, from /proc (Stat.StartTicks)
	done       chan struct{} // closed when result is set
	result     Result
	// cgroup is the job's cgroup directory, "" when it has none;
	// cgroupErr says why a job given one has none.
	cgroup    string
	cgroupErr error

	stopMu sync.Mutex // one Stop at a time; guards the fields below
	// groupEmpty: the process group was seen without a live process, so
	// its ID may be given to another group one day and is signalled no
	// more. Only the cgroup may still hold processes of the job.
	groupEmpty    bool
	cgroupRemoved bool

	usageMu sync.Mutex
	usage   Usage // the cgroup's last reading
}

// Start starts the job s describes, in a process group of its own, with its
// output appended to s.LogPath and read for progress. ctx bounds the start
// only: the job outlives it, and outlives the agent too (see the package
// documentation).
func Start(ctx context.Context, s Spec) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.Command) == 0 {
		return nil, errors.New("the job has no command")
	}
	if s.LogPath == "" {
		return nil, errors.New("the job has no log path")
	}
	current, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("finding the agent's user: %w", err)
	}
	acct, err := resolveUser(s.User, os.Geteuid(), current, s.MinUID)
	if err != nil {
		return nil, err
	}
	env, err := environ(s, acct)
	if err != nil {
		return nil, err
	}
	path, err := lookPath(s.Command[0], env)
	if err != nil {
		return nil, err
	}
	if s.ProgressFile != "" {
		if err := createProgressFile(s.ProgressFile, acct.cred); err != nil {
			return nil, err
		}
	}

	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o750); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	logw, err := os.OpenFile(s.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening the job's log: %w", err)
	}
	defer logw.Close() // the job holds its own copy
	logr, err := os.Open(s.LogPath)
	if err != nil {
		return nil, fmt.Errorf("opening the job's log for reading: %w", err)
	}
	from, err := logr.Seek(0, io.SeekEnd) // an earlier run's output is not this run's progress
	if err != nil {
		logr.Close()
		return nil, fmt.Errorf("reading the job's log: %w", err)
	}

	newCmd := func() *exec.Cmd {
		return &exec.Cmd{
			Path:   path,
			Args:   s.Command,
			Env:    env,
			Dir:    s.WorkDir,
			Stdout: logw, // an *os.File is handed to the job as it is: no pipe for
			Stderr: logw, // the agent to keep open, so the job survives the agent
			SysProcAttr: &syscall.SysProcAttr{
				Setpgid:    true,
				Credential: acct.cred,
			},
		}
	}
	cmd, cgroup, cgroupErr, err := startCmd(newCmd, s.Cgroup)
	if err != nil {
		logr.Close()
		return nil, fmt.Errorf("starting the job: %w", err)
	}
	p := &Process{pid: cmd.Process.Pid, cgroup: cgroup, cgroupErr: cgroupErr, done: make(chan struct{})}
	// Nobody has reaped the child yet (p.wait does, below), so its stat is
	// there, if only as a zombie's.
	if st, err := ReadStat(p.pid); err == nil {
		p.startTicks = st.StartTicks
	}
	f := &follower{r: logr, off: from, parser: progress.NewParser(s.OnProgress), stop: make(chan struct{}), stopped: make(chan struct{})}
	go f.run()
	go p.wait(cmd, time.Now().UTC(), f)
	return p, nil
}

// startCmd starts the command newCmd makes, in the cgroup dir when dir is
// not "": inside it from the start (clone3 with CLONE_INTO_CGROUP, so
// that nothing it forks is ever outside), or, where the kernel cannot do
// that, moved there right after it started. It returns the cgroup the job
// is in; "", with the reason in cgroupErr, when it could not be put in
// one: the job runs all the same. err is the start's own failure.
func startCmd(newCmd func() *exec.Cmd, dir string) (cmd *exec.Cmd, cgroup string, cgroupErr, err error) {
	cmd = newCmd()
	if dir == "" {
		return cmd, "", nil, cmd.Start()
	}
	cg, cgroupErr := makeCgroup(dir)
	if cgroupErr != nil {
		return cmd, "", cgroupErr, cmd.Start()
	}
	defer cg.Close() // after the start: the child's clone3 needs it open
	if cloneIntoCgroup {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
		err = cmd.Start()
		if err == nil {
			return cmd, dir, nil, nil
		}
		if !cloneUnsupported(err) {
			_ = removeCgroup(dir)
			return nil, "", nil, err
		}
		cmd = newCmd() // a Cmd starts once; the failed one started nothing
	}
	if err := cmd.Start(); err != nil {
		_ = removeCgroup(dir)
		return nil, "", nil, err
	}
	// Until this write, what the job forks stays outside: a moment, on
	// kernels older than 5.7 only.
	if err := joinCgroup(dir, cmd.Process.Pid); err != nil {
		_ = removeCgroup(dir)
		return cmd, "", err, nil
	}
	return cmd, dir, nil, nil
}

// createProgressFile creates the job's progress file at path, empty, 0600,
// owned by the user of cred (the agent's when nil). It does not follow a
// symbolic link there, and empties and takes back a file left there.
func createProgressFile(path string, cred *syscall.Credential) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("creating the job's progress file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	default:
		err = f.Chmod(0o600) // a file left there may have had another mode
	}
	if err == nil && cred != nil {
		err = f.Chown(int(cred.Uid), int(cred.Gid))
	}
	if err != nil {
		return fmt.Errorf("creating the job's progress file: %w", err)
	}
	return nil
}

// PID returns the process ID of the job's first process, which is also its
// process group ID.
func (p *Process) PID() int { return p.pid }

// StartTicks is when the job's first process started, in clock ticks
// after boot (Stat.StartTicks), 0 when /proc could not tell. An agent
// writes it down with the PID, to Adopt the job after a restart.
func (p *Process) StartTicks() uint64 { return p.startTicks }

// Cgroup is the job's cgroup directory, "" when it runs without one.
func (p *Process) Cgroup() string { return p.cgroup }

// CgroupErr says why a job given Spec.Cgroup runs without a cgroup (the
// parent is not a cgroup v2 directory, the agent may not write there, …);
// nil when it has its cgroup or was given none. The job runs all the
// same, in its process group only.
func (p *Process) CgroupErr() error { return p.cgroupErr }

// Usage returns the job's resource use as its cgroup counts it: read now
// while the cgroup is there, the last reading once Stop has removed it.
// ok is false for a job without a cgroup.
func (p *Process) Usage() (u Usage, ok bool) {
	if p.cgroup == "" {
		return Usage{}, false
	}
	p.usageMu.Lock()
	defer p.usageMu.Unlock()
	if now, err := readUsage(p.cgroup); err == nil {
		// The cgroup's counters only grow; max keeps a cgroup made later
		// under the same name, once ours is removed, from lowering them.
		p.usage = Usage{
			UserTime:   max(p.usage.UserTime, now.UserTime),
			SystemTime: max(p.usage.SystemTime, now.SystemTime),
			MemoryPeak: max(p.usage.MemoryPeak, now.MemoryPeak),
		}
	}
	return p.usage, true
}

// Done is closed when the job's first process has ended and Wait returns
// at once.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the job's first process to end and returns how it ended,
// once its output has been read for progress. It may be called any number
// of times, from any goroutine; each call returns the same Result.
// Processes the job left behind, in its group or its cgroup, are Stop's
// business.
func (p *Process) Wait() Result {
	<-p.done
	return p.result
}

// wait reaps the process, lets the follower read the last of the log and
// publishes the result.
func (p *Process) wait(cmd *exec.Cmd, started time.Time, f *follower) {
	_ = cmd.Wait() // an exit status other than 0 is an error here; the state says all
	r := Result{ExitCode: -1, Started: started, Ended: time.Now().UTC()}
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			if ws.Signaled() {
				r.Signal = ws.Signal()
			} else {
				r.ExitCode = ws.ExitStatus()
			}
		}
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.UserTime = time.Duration(ru.Utime.Nano())
			r.SystemTime = time.Duration(ru.Stime.Nano())
			r.MaxRSS = ru.Maxrss * 1024 // Linux counts KiB
		}
	}
	r = p.withCgroupUsage(r)
	close(f.stop)
	<-f.stopped
	p.result = r
	close(p.done)
}

// withCgroupUsage puts the cgroup's count of the job's resource use in
// r, for a job that has a cgroup.
func (p *Process) withCgroupUsage(r Result) Result {
	u, ok := p.Usage()
	if !ok {
		return r
	}
	// Every process the job waited for was in the cgroup too; max covers
	// the moment a job moved into it after its start spent outside.
	r.UserTime, r.SystemTime = max(r.UserTime, u.UserTime), max(r.SystemTime, u.SystemTime)
	if u.MemoryPeak > 0 {
		r.MaxRSS = u.MemoryPeak
	}
	return r
}

// follower reads what the job appends to its log into a progress.Parser.
// The job writes the log itself, so the agent reads it back rather than
// sitting between the job and its log.
type follower struct {
	r       *os.File
	off     int64
	parser  *progress.Parser
	stop    chan struct{} // closed when the job's process has ended
	stopped chan struct{} // closed when the last of the log is read
}

func (f *follower) run() {
	defer close(f.stopped)
	defer f.r.Close()
	t := time.NewTicker(followEvery)
	defer t.Stop()
	buf := make([]byte, 32<<10)
	for {
		f.read(buf)
		select {
		case <-t.C:
		case <-f.stop:
			f.read(buf)
			f.parser.Flush()
			return
		}
	}
}

// read reads the log from where it last stopped to its end.
func (f *follower) read(buf []byte) {
	for {
		n, err := f.r.ReadAt(buf, f.off)
		f.off += int64(n)
		_, _ = f.parser.Write(buf[:n]) // never fails
		if err != nil || n < len(buf) {
			return // io.EOF, or a read error that the next tick retries
		}
	}
}
