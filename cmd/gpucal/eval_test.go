package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEvalEstimateCommand runs eval estimate on a tiny SWF trace and checks
// the JSON fields a script reads, and that mistakes exit 2.
func TestEvalEstimateCommand(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "tiny.swf")
	data := "; MaxProcs: 8\n" +
		"1 0 10 100 1 -1 -1 1 400 -1 1 1 1 -1 -1 -1 -1 -1\n" +
		"2 1000 0 100 1 -1 -1 1 400 -1 1 1 1 -1 -1 -1 -1 -1\n" +
		"3 2000 5 120 2 -1 -1 2 400 -1 0 2 1 -1 -1 -1 -1 -1\n"
	if err := os.WriteFile(trace, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"eval", "estimate", "--trace", trace, "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json is not a JSON object: %v\n%s", err, out.String())
	}
	fields := []string{"n", "accuracy", "mae_s", "within_10pct", "within_50pct", "within_100pct", "under_rate", "p90_coverage"}
	for _, f := range fields {
		if _, ok := got[f]; !ok {
			t.Errorf("no field %q in %s", f, out.String())
		}
	}
	if got["n"] != 3.0 {
		t.Errorf("n = %v, want 3", got["n"])
	}
	baselines, _ := got["baselines"].(map[string]any)
	var names []string
	for name, b := range baselines {
		names = append(names, name)
		for _, f := range fields {
			if _, ok := b.(map[string]any)[f]; !ok {
				t.Errorf("baseline %s has no field %q", name, f)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"global_median", "last_two", "user_request"}) {
		t.Errorf("baselines %v", names)
	}
	out.Reset()
	if code := run(context.Background(), e, []string{"eval", "estimate", "--trace", trace}); code != 0 {
		t.Fatalf("table: exit %d: %s", code, errOut.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("last_two")) {
		t.Errorf("the table has no last_two row:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"eval"},
		{"eval", "runtime", "--trace", trace},
		{"eval", "estimate", "--trace", trace, "--format", "parquet"},
		{"eval", "estimate", "--format", "swf"},
	} {
		errOut.Reset()
		if code := run(context.Background(), e, args); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}

// TestEvalProgressCommand runs eval progress on tiny mini-batch files, by
// directory and by file, and checks its mistakes and bad files.
func TestEvalProgressCommand(t *testing.T) {
	dir := t.TempDir()
	job := func(slow int) string { // 20 iterations, two workers; worker 1 slows down from iteration slow
		var b strings.Builder
		b.WriteString(",worker,gpu,time,batch_time_norm\n")
		for i := 1; i <= 20; i++ {
			t1 := 100
			if i >= slow {
				t1 = 150
			}
			fmt.Fprintf(&b, "%d,0,25,%d,100\n%d,1,25,%d,%d\n", 2*i-2, i, 2*i-1, i, t1)
		}
		return b.String()
	}
	files := map[string]string{
		"job_1_norm.csv": job(21), // steady
		"job_2_norm.csv": job(11), // slower from half-way
		"notes.txt":      "not a job file",
		"bad.csv":        ",worker,gpu,time,batch_time_norm\n0,0,25,1,100\n1,0,25,two,100\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	e := &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	evalProgress := func(args ...string) int {
		out.Reset()
		errOut.Reset()
		return run(context.Background(), e, append([]string{"eval", "progress"}, args...))
	}

	t.Run("a directory, as JSON", func(t *testing.T) {
		if code := evalProgress("--trace", dir, "--json"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		var got struct {
			Every       int64 `json:"every"`
			Checkpoints []struct {
				Progress   float64                   `json:"progress"`
				Predictors map[string]map[string]any `json:"predictors"`
			} `json:"checkpoints"`
			All  map[string]map[string]any `json:"all"`
			Jobs []struct {
				Name string `json:"name"`
			} `json:"jobs"`
			SpreadFactor *float64 `json:"p90_spread_factor"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("--json: %v\n%s", err, out.String())
		}
		var names []string
		for _, j := range got.Jobs {
			names = append(names, j.Name)
		}
		if !slices.Equal(names, []string{"job_1_norm.csv", "job_2_norm.csv"}) {
			t.Errorf("jobs %v, want the two job files in name order", names)
		}
		if got.Every != 1 || len(got.Checkpoints) != 19 || got.SpreadFactor == nil {
			t.Errorf("every %d, %d checkpoints, spread factor %v; want 1, 19 (5 %%…95 %%) and a factor",
				got.Every, len(got.Checkpoints), got.SpreadFactor)
		}
		for _, name := range []string{"gpucal", "average", "last_step", "last_10pct"} {
			s := got.All[name]
			for _, f := range []string{"n", "mean_rel_error", "median_rel_error", "under_rate"} {
				if _, ok := s[f]; !ok {
					t.Errorf("%s has no field %q", name, f)
				}
			}
			if _, ok := s["p90_coverage"]; ok != (name == "gpucal") {
				t.Errorf("%s: p90_coverage present = %v, want it on gpucal only", name, ok)
			}
		}
	})

	t.Run("files, as a table", func(t *testing.T) {
		if code := evalProgress("--trace", filepath.Join(dir, "job_2_norm.csv"), "--trace", filepath.Join(dir, "job_1_norm.csv"), "--every", "2"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		for _, want := range []string{"every 2 iteration", "10%       gpucal", "5–95%", "last_10pct", "job_2_norm.csv", "P90 spread factor"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the table has no %q:\n%s", want, out.String())
			}
		}
		if strings.Index(out.String(), "job_2_norm.csv") > strings.Index(out.String(), "job_1_norm.csv") {
			t.Errorf("files are not kept in the order given:\n%s", out.String())
		}
	})

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"nothing to evaluate", []string{"eval"}, 2, "gpucal eval progress --trace FILE|DIR"},
		{"no trace", []string{"eval", "progress", "--json"}, 2, "--trace FILE or --trace DIR"},
		{"every zero", []string{"eval", "progress", "--trace", dir, "--every", "0"}, 2, "--every must be 1 or more"},
		{"bad file", []string{"eval", "progress", "--trace", filepath.Join(dir, "bad.csv")}, 1, "bad.csv: mini-batch file: line 3: time \"two\""},
		{"missing file", []string{"eval", "progress", "--trace", filepath.Join(dir, "job_9_norm.csv")}, 1, "job_9_norm.csv"},
		{"directory without jobs", []string{"eval", "progress", "--trace", t.TempDir()}, 1, "has no mini-batch job files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errOut.Reset()
			if code := run(context.Background(), e, tt.args); code != tt.wantCode || !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}
