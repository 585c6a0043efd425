package run

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestProgressFileCreated: Start empties a file left at the progress
// path, makes it 0600 and the agent's, and the job writes to it through
// GPUCAL_PROGRESS_FILE.
func TestProgressFileCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j7")
	if err := os.WriteFile(path, []byte("0.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, log := start(t, Spec{ProgressFile: path}, `wc -c < "$GPUCAL_PROGRESS_FILE"; echo 120/1000 > "$GPUCAL_PROGRESS_FILE"`)
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("job exited %d:\n%s", r.ExitCode, readLog(t, log))
	}
	if got := strings.TrimSpace(readLog(t, log)); got != "0" {
		t.Errorf("the job found %s bytes in its progress file, want it emptied", got)
	}
	if got := readLog(t, path); got != "120/1000\n" {
		t.Errorf("progress file %q, want the job's line", got)
	}
	checkOwner(t, path, 0o600, os.Getuid(), os.Getgid())
}

// TestProgressFileAsUser: a job run as another user owns its progress
// file, in a directory it may pass through but not list.
func TestProgressFileAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a job as another user needs the test to run as root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to run the job as: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "progress")
	for _, d := range []string{filepath.Dir(filepath.Dir(dir)), filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil { // t.TempDir's are 0700
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "j8")
	p, log := start(t, Spec{User: "nobody", WorkDir: "/", ProgressFile: path},
		`echo '{"fraction":0.5}' > "$GPUCAL_PROGRESS_FILE" && ls "$(dirname "$GPUCAL_PROGRESS_FILE")" || echo "not listed"`)
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("job exited %d:\n%s", r.ExitCode, readLog(t, log))
	}
	if got := readLog(t, path); got != "{\"fraction\":0.5}\n" {
		t.Errorf("progress file %q, want the job's line; log:\n%s", got, readLog(t, log))
	}
	if got := readLog(t, log); !strings.Contains(got, "not listed") {
		t.Errorf("the job listed the progress directory: %q", got)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	checkOwner(t, path, 0o600, uid, gid)
}

// TestProgressFileSymlink: Start does not write through a symbolic link
// at the progress path.
func TestProgressFileSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "j9")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Command: []string{"true"}, LogPath: filepath.Join(dir, "job.log"), ProgressFile: path}
	p, err := Start(t.Context(), spec)
	if err == nil {
		p.Wait()
		t.Fatal("Start wrote a progress file through a symbolic link")
	}
	if !strings.Contains(err.Error(), "progress file") {
		t.Errorf("error %q, want it to name the progress file", err)
	}
	if got := readLog(t, target); got != "keep" {
		t.Errorf("the link's target now holds %q", got)
	}
}

// checkOwner checks path's permissions and owner.
func checkOwner(t *testing.T, path string, perm os.FileMode, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != perm || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s: mode %v, owner %d:%d; want %v, %d:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, perm, uid, gid)
	}
}
