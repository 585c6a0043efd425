package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpucal/gpucal/agent/progress"
	"github.com/gpucal/gpucal/core"
)

const (
	// progressTail is how much of the end of a progress file is read: only
	// its last line counts, and a job may append to it for days.
	progressTail = 4 << 10
	// progressFresh is how long after a progress file was last modified it
	// is read again although its size and time look the same: a file
	// rewritten to as many bytes within one tick of the file system's
	// clock is caught all the same.
	progressFresh = time.Second
	// maxLoggedErrors bounds the distinct errors logged per progress file.
	maxLoggedErrors = 8
)

// progressFile reads one job's progress file (docs/progress.md section 2),
// which the job writes and the agent only reads.
type progressFile struct {
	id   int64
	path string

	mu     sync.Mutex // one read at a time: the watcher's or finish's
	seen   fileStamp  // the file as last read
	logged map[string]bool
}

// fileStamp tells whether a file changed since it was last read.
type fileStamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func (s fileStamp) same(o fileStamp) bool {
	return s.ino == o.ino && s.size == o.size && s.mtime.Equal(o.mtime)
}

// read reads the file if it changed since the last read. ok says it
// holds a valid report; an empty file, one the job has not changed, and
// one that is not there (the job renames a new one in place) are nothing
// yet. A line that is not progress is an error.
func (f *progressFile) read() (r progress.Report, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Lstat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return progress.Report{}, false, nil
	case err != nil:
		return progress.Report{}, false, err
	case !fi.Mode().IsRegular():
		return progress.Report{}, false, fmt.Errorf("%s is not a regular file", f.path)
	}
	stamp := stampOf(fi)
	if stamp.same(f.seen) && time.Since(stamp.mtime) > progressFresh {
		return progress.Report{}, false, nil
	}
	data, err := readTail(f.path)
	if err != nil {
		return progress.Report{}, false, err
	}
	f.seen = stamp
	r, err = progress.ParseFile(data)
	if errors.Is(err, progress.ErrNoProgress) {
		return progress.Report{}, false, nil
	}
	return r, err == nil, err
}

// firstTime reports whether err is one not met before in this file, up to
// maxLoggedErrors of them, so that a job that keeps a bad line there is
// told once, not at every read.
func (f *progressFile) firstTime(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logged == nil {
		f.logged = map[string]bool{}
	}
	msg := err.Error()
	if f.logged[msg] || len(f.logged) >= maxLoggedErrors {
		return false
	}
	f.logged[msg] = true
	return true
}

func stampOf(fi os.FileInfo) fileStamp {
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// readTail reads the last progressTail bytes of the regular file at path,
// following no symbolic link and waiting on no FIFO: the file is the
// job's, and the agent reads it with more rights than the job has.
func readTail(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	from := max(fi.Size()-progressTail, 0)
	buf := make([]byte, fi.Size()-from)
	n, err := file.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: the job truncated it meanwhile
		return nil, err
	}
	return buf[:n], nil
}

// watchProgress reads the running jobs' progress files every
// progressEvery until ctx ends.
func (a *Agent) watchProgress(ctx context.Context) {
	t := time.NewTicker(a.progressEvery)
	defer t.Stop()
	for {
		a.mu.Lock()
		var running []*job
		for _, id := range a.jobIDsLocked() {
			if j := a.jobs[id]; j.pf != nil && j.rec.Phase == phaseRunning {
				running = append(running, j)
			}
		}
		a.mu.Unlock()
		for _, j := range running {
			a.readProgress(j)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readProgress reads job j's progress file, if it has one, and keeps a
// valid report as the job's latest progress, which from then on wins over
// what its log says. A line that is not progress is logged once per
// distinct error and changes nothing.
func (a *Agent) readProgress(j *job) {
	if j.pf == nil {
		return
	}
	r, ok, err := j.pf.read()
	if err != nil {
		if j.pf.firstTime(err) {
			a.log.Warn("the job's progress file says no progress; keeping its last progress", "job", core.JobName(j.pf.id), "error", err)
		}
		return
	}
	if !ok {
		return
	}
	p, ok := progressReport(r, 0) // a file gives the whole job's progress
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.jobs[j.pf.id] != j {
		return // forgotten meanwhile
	}
	if !j.rec.FileProgress || j.rec.Progress == nil || *j.rec.Progress != p {
		j.rec.Progress, j.rec.FileProgress = &p, true
		a.dirty = true
	}
}

// progressPath is where job id's progress file goes.
func (a *Agent) progressPath(id int64) string {
	return filepath.Join(a.progressDir, core.JobName(id))
}

// makeProgressDir makes the directory of the jobs' progress files, 0711
// whatever the umask: each job's user must reach its own file there, by
// name, and list none.
func makeProgressDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("making the progress directory: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("making the progress directory: %w", err)
	}
	return nil
}

// within reports whether path is dir or inside it, lexically.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
