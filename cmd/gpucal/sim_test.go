package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimCommand replays a tiny Philly-format trace through every policy
// and checks the JSON a script would read, and that mistakes exit 2.
func TestSimCommand(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "tiny.csv")
	data := "#job id,arrival time (sec),topology,shape,size,duration (sec)\n" +
		"0,0,CLOS,1,1,3600\n1,10,CLOS,2,2,600\n2,20,CLOS,1,1,60\n3,30,CLOS,8,8,1200\n"
	if err := os.WriteFile(trace, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"sim", "--trace", trace, "--format", "philly", "--nodes", "1", "--gpus-per-node", "8", "--compare", "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var results []map[string]any
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("--compare --json is not a JSON array: %v\n%s", err, out.String())
	}
	var policies []string
	for _, r := range results {
		policies = append(policies, r["policy"].(string))
		if r["jobs"].(float64) != 4 {
			t.Errorf("%s replayed %v jobs, want 4", r["policy"], r["jobs"])
		}
	}
	if got := strings.Join(policies, ","); got != "fifo,sjf-oracle,easy,gpucal" {
		t.Errorf("policies %s", got)
	}
	// The History estimator and an EASY-like planner replay the same jobs,
	// and --cpuprofile writes a profile of the replay.
	out.Reset()
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	if code := run(context.Background(), e, []string{"sim", "--trace", trace, "--format", "philly", "--nodes", "1",
		"--estimator", "history", "--protect", "1", "--json", "--cpuprofile", prof}); code != 0 {
		t.Fatalf("--estimator history --protect 1: exit %d: %s", code, errOut.String())
	}
	var one map[string]any
	if err := json.Unmarshal(out.Bytes(), &one); err != nil || one["estimator"] != "history" || one["jobs"].(float64) != 4 {
		t.Errorf("--estimator history --protect 1 = %s (%v), want 4 jobs with the history estimator", out.String(), err)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile %s: %v, want a profile", prof, err)
	}
	for _, args := range [][]string{
		{"sim", "--trace", trace, "--policy", "random"},
		{"sim", "--trace", trace, "--format", "parquet"},
		{"sim", "--trace", trace, "--format", "philly", "--protect", "-1"},
		{"sim", "--trace", trace, "--format", "philly", "--protect-shared", "-2"},
		{"sim", "--trace", trace, "--format", "philly", "--hold", "1.5"},
	} {
		errOut.Reset()
		if code := run(context.Background(), e, args); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}
