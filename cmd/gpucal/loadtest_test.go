package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/gpucal/gpucal/store/storetest"
)

// loadtestRun runs `gpucal loadtest --json` with args and returns its result.
func loadtestRun(t *testing.T, args ...string) loadResult {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"loadtest", "--json"}, args...)...)
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadtest %v: %v\n%s%s", args, err, out.String(), errOut.String())
	}
	var r loadResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("loadtest's JSON: %v\n%s", err, out.String())
	}
	t.Logf("%+v", r)
	return r
}

// checkLoad holds a load test's result to what a trusted scheduler keeps.
func checkLoad(t *testing.T, r loadResult) {
	t.Helper()
	if r.Heartbeats == 0 || r.Bookings == 0 {
		t.Errorf("no load: %d heartbeats, %d bookings", r.Heartbeats, r.Bookings)
	}
	if r.failed() {
		t.Errorf("errors %d %v, lost %d, overlaps %d, nodes down %d, notices twice %d", r.Errors, r.ErrorSamples, r.Lost, r.Overlaps, r.NodesDown, r.NoticesTwice)
	}
}

// TestLoadtestSQLite: a small load test on one server on SQLite passes
// its checks.
func TestLoadtestSQLite(t *testing.T) {
	r := loadtestRun(t, "--db", storetest.SQLite(t), "--replicas", "1", "--agents", "20", "--clients", "3", "--duration", "4s", "--heartbeat", "1s")
	checkLoad(t, r)
}

// TestLoadtestFailover: two replicas on PostgreSQL under load; the leader
// is killed with SIGKILL; another leads within the lease and a little,
// and nothing is lost, doubled or marked down.
func TestLoadtestFailover(t *testing.T) {
	db := storetest.Postgres(t)
	r := loadtestRun(t, "--db", db, "--replicas", "2", "--agents", "40", "--clients", "4", "--duration", "12s", "--heartbeat", "1s",
		"--leader-lease", "3s", "--kill-leader-after", "4s")
	checkLoad(t, r)
	if r.TakeoverS <= 0 || r.TakeoverS > 3*1.5 {
		t.Errorf("takeover after %.1f s; want within the 3 s lease and a renewal", r.TakeoverS)
	}
	t.Logf("takeover after SIGKILL under load: %.2f s", r.TakeoverS)
}
