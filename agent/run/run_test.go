package run

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/agent/progress"
)

// start starts a job running sh -c script, logging to a fresh directory,
// and returns it with its log path. spec's Command and LogPath are filled
// in when empty.
func start(t *testing.T, spec Spec, script string) (*Process, string) {
	t.Helper()
	if spec.Command == nil {
		spec.Command = []string{"sh", "-c", script}
	}
	if spec.LogPath == "" {
		spec.LogPath = filepath.Join(t.TempDir(), "logs", "job.log")
	}
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		p.Wait()
	})
	return p, spec.LogPath
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// awaitLog waits until the log at path contains s: the job is ready.
func awaitLog(t *testing.T, path, s string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
	}
	t.Fatalf("the log never showed %q", s)
}

func TestEnvironment(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	progressFile := filepath.Join(t.TempDir(), "j42")
	spec := Spec{
		Env:          map[string]string{"FOO": "bar baz", "HF_HOME": "/data/hf"},
		GPUs:         []string{"GPU-bbb", "GPU-aaa"},
		JobID:        "j42",
		Server:       "https://gpucal.example.org",
		JobToken:     "tok",
		ProgressFile: progressFile,
		Nodes:        []string{"node-1", "node-2"},
		Rank:         1,
	}
	p, log := start(t, spec, "env")
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("env exited %d:\n%s", r.ExitCode, readLog(t, log))
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(readLog(t, log)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	want := map[string]string{
		"PATH":                   basePath,
		"HOME":                   me.HomeDir,
		"USER":                   me.Username,
		"LOGNAME":                me.Username,
		"FOO":                    "bar baz",
		"HF_HOME":                "/data/hf",
		"CUDA_VISIBLE_DEVICES":   "GPU-bbb,GPU-aaa",
		"NVIDIA_VISIBLE_DEVICES": "GPU-bbb,GPU-aaa",
		"GPUCAL_JOB":             "j42",
		"GPUCAL_JOB_ID":          "j42",
		"GPUCAL_SERVER":          "https://gpucal.example.org",
		"GPUCAL_JOB_TOKEN":       "tok",
		"GPUCAL_PROGRESS_FILE":   progressFile,
		"GPUCAL_NODES":           "node-1,node-2",
		"GPUCAL_NODE_RANK":       "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// Nothing of the agent's (the test's) environment leaks in; sh may add PWD, SHLVL and _.
	for k := range got {
		if _, ok := want[k]; !ok && k != "PWD" && k != "SHLVL" && k != "_" {
			t.Errorf("unexpected variable %s=%q", k, got[k])
		}
	}
}

func TestEnvironmentUnsetOptional(t *testing.T) {
	p, log := start(t, Spec{}, "env")
	p.Wait()
	out := readLog(t, log)
	for _, k := range []string{"GPUCAL_JOB=", "GPUCAL_JOB_ID=", "GPUCAL_SERVER=", "GPUCAL_JOB_TOKEN=", "GPUCAL_PROGRESS_FILE=", "GPUCAL_NODES=", "GPUCAL_NODE_RANK="} {
		if strings.Contains(out, k) {
			t.Errorf("%s set though the spec leaves it empty", k)
		}
	}
	if !strings.Contains(out, "CUDA_VISIBLE_DEVICES=\n") {
		t.Errorf("a job without GPUs must see CUDA_VISIBLE_DEVICES empty; env:\n%s", out)
	}
}

func TestStartRefuses(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"GPUCAL_JOB overridden", Spec{Command: []string{"true"}, Env: map[string]string{"GPUCAL_JOB": "j1"}}, "GPUCAL_JOB is set by gpucal's agent"},
		{"any GPUCAL_ variable", Spec{Command: []string{"true"}, Env: map[string]string{"GPUCAL_OTHER": "x"}}, "GPUCAL_OTHER is set by gpucal's agent"},
		{"CUDA_VISIBLE_DEVICES", Spec{Command: []string{"true"}, Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0"}}, "CUDA_VISIBLE_DEVICES is set by gpucal's agent"},
		{"NVIDIA_VISIBLE_DEVICES", Spec{Command: []string{"true"}, Env: map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"}}, "NVIDIA_VISIBLE_DEVICES is set by gpucal's agent"},
		{"bad name", Spec{Command: []string{"true"}, Env: map[string]string{"A=B": "x"}}, "not a valid name"},
		{"no command", Spec{}, "no command"},
		{"unknown program", Spec{Command: []string{"no-such-program-gpucal"}}, `"no-such-program-gpucal" not found in the job's PATH`},
		{"unknown user", Spec{Command: []string{"true"}, User: "no-such-user-gpucal"}, "no-such-user-gpucal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.LogPath = filepath.Join(t.TempDir(), "job.log")
			p, err := Start(context.Background(), tt.spec)
			if err == nil {
				p.Wait()
				t.Fatalf("Start succeeded; want an error with %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestResolveUserNotRoot(t *testing.T) {
	me := &user.User{Username: "alice", HomeDir: "/home/alice", Uid: "1000", Gid: "1000"}
	acct, err := resolveUser("", 1000, me, 0)
	if err != nil || acct.name != "alice" || acct.home != "/home/alice" || acct.cred != nil {
		t.Errorf(`resolveUser("") = %+v, %v; want alice as herself`, acct, err)
	}
	if acct, err := resolveUser("alice", 1000, me, 0); err != nil || acct.cred != nil {
		t.Errorf(`resolveUser("alice") = %+v, %v; want alice as herself`, acct, err)
	}
	_, err = resolveUser("bob", 1000, me, 0)
	if err == nil || !strings.Contains(err.Error(), `running a job as user "bob" needs an agent running as root; it runs as "alice"`) {
		t.Errorf(`resolveUser("bob") by a non-root agent: error %v`, err)
	}
}

// TestResolveUserRoot: a root agent never runs a job as root or a system
// account, whatever the job's owner is called; as itself only when asked
// (no user).
func TestResolveUserRoot(t *testing.T) {
	root := &user.User{Username: "root", HomeDir: "/root", Uid: "0", Gid: "0"}
	if acct, err := resolveUser("", 0, root, 0); err != nil || acct.name != "root" || acct.cred != nil {
		t.Errorf(`resolveUser("") by root = %+v, %v; want root itself`, acct, err)
	}
	for _, name := range []string{"root", "daemon", "bin"} {
		if _, err := user.Lookup(name); err != nil {
			continue
		}
		if _, err := resolveUser(name, 0, root, 0); err == nil || !strings.Contains(err.Error(), "never as root or a system account") {
			t.Errorf("resolveUser(%q) by root: %v, want a refusal", name, err)
		}
	}
	if u, err := user.Lookup("nobody"); err == nil {
		if _, err := resolveUser("nobody", 0, root, 0); err != nil {
			t.Errorf(`resolveUser("nobody", uid %s) by root: %v`, u.Uid, err)
		}
		if _, err := resolveUser("nobody", 0, root, 70000); err == nil {
			t.Error("a user below a raised minimum was accepted")
		}
	}
}

func TestRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a job as another user needs the test to run as root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to run the job as: %v", err)
	}
	p, log := start(t, Spec{User: "nobody", WorkDir: "/"}, `id -u; id -g; echo "HOME=$HOME USER=$USER"`)
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("job exited %d:\n%s", r.ExitCode, readLog(t, log))
	}
	want := u.Uid + "\n" + u.Gid + "\nHOME=" + u.HomeDir + " USER=nobody\n"
	if got := readLog(t, log); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("log mode %v, want at most 0640", fi.Mode().Perm())
	}
}

func TestExit(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantCode   int
		wantSignal syscall.Signal
	}{
		{"success", "true", 0, 0},
		{"exit 3", "exit 3", 3, 0},
		{"killed by a signal", "kill -KILL $$", -1, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := start(t, Spec{}, tt.script)
			r := p.Wait()
			if r.ExitCode != tt.wantCode || r.Signal != tt.wantSignal {
				t.Errorf("exit code %d, signal %v; want %d, %v", r.ExitCode, r.Signal, tt.wantCode, tt.wantSignal)
			}
			if r.Started.IsZero() || r.Ended.Before(r.Started) {
				t.Errorf("started %v, ended %v", r.Started, r.Ended)
			}
		})
	}
}

func TestResourceUse(t *testing.T) {
	// Busy for a while in the shell itself, so that the CPU time is the job's own.
	p, _ := start(t, Spec{}, `i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done`)
	r := p.Wait()
	if r.ExitCode != 0 {
		t.Fatalf("exit code %d", r.ExitCode)
	}
	if r.UserTime+r.SystemTime <= 0 {
		t.Errorf("no CPU time recorded: user %v, system %v", r.UserTime, r.SystemTime)
	}
	if r.MaxRSS < 64<<10 {
		t.Errorf("max RSS %d bytes; a shell uses more than 64 KiB", r.MaxRSS)
	}
}

func TestLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	log := filepath.Join(dir, "job.log")
	for _, run := range []string{"1", "2"} {
		p, _ := start(t, Spec{LogPath: log}, "echo out"+run+"; echo err"+run+" >&2; echo out"+run+"b")
		p.Wait()
	}
	if got, want := readLog(t, log), "out1\nerr1\nout1b\nout2\nerr2\nout2b\n"; got != want {
		t.Errorf("log:\n%s\nwant (both streams, runs appended):\n%s", got, want)
	}
	for path, want := range map[string]os.FileMode{dir: 0o750, log: 0o640} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&^want != 0 {
			t.Errorf("%s: mode %v, want at most %v", path, fi.Mode().Perm(), want)
		}
	}
}

func TestProgress(t *testing.T) {
	log := filepath.Join(t.TempDir(), "job.log")
	// An earlier run's bar in the same log is not this run's progress.
	if err := os.WriteFile(log, []byte(" 90%|######### | 9/10 [00:09<00:01,  1.00it/s]\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []progress.Report
	)
	spec := Spec{LogPath: log, OnProgress: func(r progress.Report) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	}}
	script := `printf 'Epoch 1/2\n'
printf ' 50%%|#####     | 5/10 [00:01<00:01,  5.00it/s]\r'
sleep 0.5
printf 'warning: on stderr\n' >&2
printf 'Epoch 2/2\n'
printf '100%%|##########| 10/10 [00:02<00:00,  5.00it/s]'`
	p, _ := start(t, spec, script)
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatalf("no progress reported; log:\n%s", readLog(t, log))
	}
	first, last := got[0], got[len(got)-1]
	if first.Epoch != 1 || first.Epochs != 2 || first.Fraction != 0 {
		t.Errorf("first report %+v, want epoch 1 of 2 at 0", first)
	}
	if last.Step != 10 || last.Total != 10 || last.Epoch != 2 || last.Fraction != 1 {
		t.Errorf("last report %+v, want 10/10 in epoch 2 of 2, fraction 1 (read at the flush)", last)
	}
	for _, r := range got {
		if r.Step == 9 {
			t.Errorf("the earlier run's bar was reported: %+v", r)
		}
	}
}

func TestWaitTwice(t *testing.T) {
	p, _ := start(t, Spec{}, "echo hi; exit 7")
	results := make([]Result, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = p.Wait() })
	}
	wg.Wait()
	for i, r := range results {
		if r != results[0] {
			t.Errorf("Wait %d returned %+v, Wait 0 %+v", i, r, results[0])
		}
	}
	if results[0].ExitCode != 7 {
		t.Errorf("exit code %d, want 7", results[0].ExitCode)
	}
	if again := p.Wait(); again != results[0] {
		t.Errorf("a later Wait returned %+v, want %+v", again, results[0])
	}
}

// TestJobPathAndWorkDir: the program is found in the job's PATH, which
// Spec.Env may set, and the job runs in Spec.WorkDir.
func TestJobPathAndWorkDir(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gpucal-hello"), []byte("#!/bin/sh\necho \"hello from $(pwd)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Command: []string{"gpucal-hello"}, Env: map[string]string{"PATH": bin + ":" + basePath}, WorkDir: work}
	p, log := start(t, spec, "")
	if r := p.Wait(); r.ExitCode != 0 {
		t.Fatalf("exit code %d:\n%s", r.ExitCode, readLog(t, log))
	}
	if got, want := readLog(t, log), "hello from "+work+"\n"; got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}
