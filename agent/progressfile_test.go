package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
)

// gatedScript is a job script whose steps wait for the test: "gate N"
// waits until the test calls open(N).
func gatedScript(t *testing.T, script string) (string, func(n int)) {
	dir := t.TempDir()
	prelude := fmt.Sprintf("gate() { while [ ! -e %s/$1 ]; do sleep 0.01; done; }\n", dir)
	return prelude + script, func(n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(n)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProgressFile: the job gets its token and its progress file in its
// environment; what it writes to the file becomes its progress and wins
// over the bars in its log from the first valid line on; a line that is
// not progress is logged once and changes nothing; the file is read one
// last time when the job ends, and removed once the job is acknowledged
// and forgotten. The token is in the state file (0600) and in no log.
func TestProgressFile(t *testing.T) {
	const token = "gpucal_jt_s3cr3t-do-not-log"
	h := newHarness(t)
	script, open := gatedScript(t, `echo "TOKEN=$GPUCAL_JOB_TOKEN FILE=$GPUCAL_PROGRESS_FILE SIZE=$(wc -c < "$GPUCAL_PROGRESS_FILE")"
printf ' 50%%|#####     | 5/10 [00:01<00:01,  5.00it/s]\n'
gate 1
echo 120/1000 > "$GPUCAL_PROGRESS_FILE"
printf ' 70%%|#######   | 7/10 [00:01<00:01,  5.00it/s]\n'
gate 2
echo '{"fraction":0.5}' >> "$GPUCAL_PROGRESS_FILE"
gate 3
echo 42 >> "$GPUCAL_PROGRESS_FILE"
gate 4
echo '{"step":999,"total":1000}' >> "$GPUCAL_PROGRESS_FILE"
printf ' 90%%|######### | 9/10 [00:01<00:01,  5.00it/s]\n'
exit 0`)
	o := shJob(21, script, "GPU-a")
	o.Token = token
	logs := &syncBuffer{}
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start(func(a *Agent) {
		a.log = slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), logs), &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", node)
	})
	path := filepath.Join(h.dir, "progress", "j21")

	// The environment, the empty file, and progress from the log until
	// the file says something.
	h.awaitLog(21, "TOKEN=")
	if got, want := h.conn.log(21), fmt.Sprintf("TOKEN=%s FILE=%s SIZE=0\n", token, path); !strings.HasPrefix(got, want) {
		t.Errorf("the job's log begins %q, want %q", got, want)
	}
	checkMode(t, filepath.Dir(path), 0o711, os.Getuid())
	checkMode(t, path, 0o600, os.Getuid())
	h.awaitJob(0, 21, "at 5 of 10 from its log", func(r core.JobReport) bool { return progressIs(r, core.ProgressReport{Step: 5, Total: 10}) })
	awaitState(t, h.dir, "the token persisted", func(st savedState) bool { return len(st.Jobs) == 1 && st.Jobs[0].Order.Token == token })
	checkMode(t, filepath.Join(h.dir, stateFile), 0o600, os.Getuid())

	// The file wins over the log.
	open(1)
	n := h.beats()
	h.awaitJob(n, 21, "at 120 of 1000 from its file", func(r core.JobReport) bool {
		return progressIs(r, core.ProgressReport{Step: 120, Total: 1000})
	})
	open(2)
	n = h.beats()
	h.awaitJob(n, 21, "at 0.5 from its file", func(r core.JobReport) bool { return progressIs(r, core.ProgressReport{Fraction: 0.5}) })

	// A line that is not progress: logged once, though read again and
	// again while fresh, and the last progress is kept.
	open(3)
	const complaint = "a fraction is at most 1"
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), complaint); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bad line was never logged; the log:\n%s", logs.String())
		}
	}
	n = h.beats()
	r := h.awaitJob(n+10, 21, "ten heartbeats later", func(core.JobReport) bool { return true })
	if !progressIs(r, core.ProgressReport{Fraction: 0.5}) || r.State != core.RunRunning {
		t.Errorf("after a bad line: %+v, progress %+v; want still running at 0.5", r, r.Progress)
	}
	if got := strings.Count(logs.String(), complaint); got != 1 {
		t.Errorf("the bad line was logged %d times, want once", got)
	}
	if !strings.Contains(logs.String(), "job=j21") {
		t.Errorf("the complaint does not name the job:\n%s", logs.String())
	}

	// The last line, written just before the job ends, is read before the
	// job is reported exited, and still wins over the bar printed after.
	open(4)
	r = h.awaitJob(0, 21, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if r.ExitCode != 0 || !progressIs(r, core.ProgressReport{Step: 999, Total: 1000}) {
		t.Errorf("exited %+v, progress %+v; want exit 0 at 999 of 1000", r, r.Progress)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the progress file is gone before the job was acknowledged: %v", err)
	}

	// Acknowledged and forgotten: the file goes.
	h.conn.set(core.DesiredState{Ack: []int64{21}})
	awaitState(t, h.dir, "j21 forgotten", func(st savedState) bool { return len(st.Jobs) == 0 })
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the progress file of a forgotten job: %v; want it removed", err)
	}
	h.stop()
	if strings.Contains(logs.String(), token) {
		t.Errorf("the agent logged the job's token:\n%s", logs.String())
	}
	h.conn.mu.Lock()
	beats := fmt.Sprintf("%+v", h.conn.beats)
	h.conn.mu.Unlock()
	if strings.Contains(beats, token) {
		t.Error("a heartbeat carried the job's token")
	}
}

// TestProgressFileAfterRestart: an agent restarted under a running job
// keeps reading the job's progress file, which still wins over its log.
func TestProgressFileAfterRestart(t *testing.T) {
	h := newHarness(t)
	script, open := gatedScript(t, `echo 0.25 > "$GPUCAL_PROGRESS_FILE"
gate 1
echo 0.6 > "$GPUCAL_PROGRESS_FILE"
gate 2
printf ' 90%%|######### | 9/10 [00:01<00:01,  5.00it/s]\n'
exit 0`)
	o := shJob(22, script, "GPU-b")
	o.Token = "gpucal_jt_22"
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start()
	first := h.awaitJob(0, 22, "at 0.25", func(r core.JobReport) bool { return progressIs(r, core.ProgressReport{Fraction: 0.25}) })
	h.stop()

	m := h.beats()
	h.start()
	h.awaitJob(m, 22, "adopted", func(r core.JobReport) bool { return r.State == core.RunRunning && r.PID == first.PID })
	open(1)
	h.awaitJob(m, 22, "at 0.6 after the restart", func(r core.JobReport) bool { return progressIs(r, core.ProgressReport{Fraction: 0.6}) })
	open(2)
	r := h.awaitJob(m, 22, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if !progressIs(r, core.ProgressReport{Fraction: 0.6}) {
		t.Errorf("exited with progress %+v; want the file's 0.6, not the log's bar", r.Progress)
	}
}

// TestProgressFileAsOwner: a root agent running a job as its owner gives
// the owner the file, in a directory the owner passes through but cannot
// list, inside a state directory it cannot list either.
func TestProgressFileAsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a job as another user needs the test to run as root")
	}
	uid := lookupUID(t, "nobody")
	h := newHarness(t)
	if err := os.Chmod(filepath.Dir(h.dir), 0o711); err != nil { // t.TempDir's are 0700
		t.Fatal(err)
	}
	o := shJob(23, `ls "$(dirname "$GPUCAL_PROGRESS_FILE")" || echo "not listed"; echo 3/4 > "$GPUCAL_PROGRESS_FILE"; exec sleep 1000`)
	o.User, o.WorkDir = "nobody", "/"
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start()
	r := h.awaitJob(0, 23, "at 3 of 4", func(r core.JobReport) bool { return progressIs(r, core.ProgressReport{Step: 3, Total: 4}) })
	if r.State != core.RunRunning {
		t.Errorf("report %+v; want it running", r)
	}
	// The log ships on its own tick, so it may trail the progress report.
	h.awaitLog(23, "not listed")
	checkMode(t, h.dir, 0o711, 0)
	checkMode(t, filepath.Join(h.dir, "progress"), 0o711, 0)
	checkMode(t, filepath.Join(h.dir, "progress", "j23"), 0o600, uid)
	checkMode(t, filepath.Join(h.dir, stateFile), 0o600, 0)
}

func progressIs(r core.JobReport, want core.ProgressReport) bool {
	return r.Progress != nil && *r.Progress == want
}

// checkMode checks path's permissions and owner.
func checkMode(t *testing.T, path string, perm os.FileMode, uid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(fi.Sys().(*syscall.Stat_t).Uid); fi.Mode().Perm() != perm || got != uid {
		t.Errorf("%s: mode %v, owner %d; want %v, %d", path, fi.Mode().Perm(), got, perm, uid)
	}
}

func lookupUID(t *testing.T, name string) int {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s to run the job as: %v", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		t.Skipf("user %s has user ID %q", name, u.Uid)
	}
	return uid
}

// syncBuffer is a bytes.Buffer for a logger's output, read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
