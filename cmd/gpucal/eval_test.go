package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
