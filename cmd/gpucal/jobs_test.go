package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/web"
)

func testEnv(t *testing.T) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
		// An unreachable server: nothing may be sent anyway.
		return map[string]string{"GPUCAL_SERVER": "http://127.0.0.1:1", "GPUCAL_CONFIG": t.TempDir() + "/none.json"}[k]
	}}, &out, &errOut
}

func TestParseSubmit(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want web.SubmitRequest
	}{
		{
			name: "the issue's example",
			args: strings.Fields("--gpus 4 --model a100 --name llama-ft --preemptible=false -- python train.py --epochs 3"),
			want: web.SubmitRequest{GPUs: 4, Model: "a100", Name: "llama-ft", Command: []string{"python", "train.py", "--epochs", "3"}},
		},
		{
			name: "everything",
			args: []string{"--gpus", "8", "--model", "h100", "--type", "finetune", "--class", "low", "--preemptible", "--reservation", "r42",
				"--project", "nlp", "--guess", "3h", "--params", "7B", "--tokens", "1.5e12", "--epochs", "3", "--steps", "9000",
				"--batch-size", "64", "--dataset", "100000", "--framework", "pytorch", "--env", "A=1", "--env", "B=x=y", "--env", "EMPTY=",
				"--workdir", "/data/run", "--json", "--", "torchrun", "--nproc-per-node", "8", "train.py", "--", "extra"},
			want: web.SubmitRequest{GPUs: 8, Model: "h100", Type: "finetune", Class: "low", Preemptible: true, Reservation: "r42",
				Project: "nlp", WorkDir: "/data/run", Env: map[string]string{"A": "1", "B": "x=y", "EMPTY": ""},
				Command: []string{"torchrun", "--nproc-per-node", "8", "train.py", "--", "extra"},
				Hints:   &web.Hints{Guess: "3h0m0s", Params: 7e9, Tokens: 1.5e12, Epochs: 3, Steps: 9000, BatchSize: 64, Dataset: 100000, Framework: "pytorch"}},
		},
		{
			name: "defaults",
			args: []string{"--", "jupyter", "lab"},
			want: web.SubmitRequest{GPUs: 1, Command: []string{"jupyter", "lab"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, errOut := testEnv(t)
			got, err := parseSubmit(e, tt.args)
			if err != nil {
				t.Fatalf("parseSubmit: %v (%s)", err, errOut)
			}
			if diff := cmp.Diff(tt.want, got.req); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]float64{"7e9": 7e9, "7B": 7e9, "70b": 70e9, "1.5T": 1.5e12, "350M": 350e6, "12k": 12e3, "": 0, "0.5": 0.5} {
		got, err := parseCount("params", in)
		if err != nil || got != want {
			t.Errorf("parseCount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"seven", "7X", "-7", "1e999", "7 B"} {
		if _, err := parseCount("params", in); err == nil {
			t.Errorf("parseCount(%q) succeeded, want an error", in)
		}
	}
}

func TestWhenArgs(t *testing.T) {
	tests := []struct {
		args []string
		want web.WhatIfRequest
		err  string
	}{
		{[]string{"8", "h100", "12h"}, web.WhatIfRequest{GPUs: 8, Model: "h100", Duration: "12h0m0s"}, ""},
		{[]string{"8", "12h"}, web.WhatIfRequest{GPUs: 8, Duration: "12h0m0s"}, ""},
		{[]string{"2", "a100-80gb"}, web.WhatIfRequest{GPUs: 2, Model: "a100-80gb"}, ""},
		{[]string{"1"}, web.WhatIfRequest{GPUs: 1}, ""},
		{[]string{"1", "1d"}, web.WhatIfRequest{GPUs: 1, Duration: "24h0m0s"}, ""},
		{[]string{"eight", "h100"}, web.WhatIfRequest{}, "not a number of GPUs"},
		{[]string{"0"}, web.WhatIfRequest{}, "not a number of GPUs"},
		{[]string{"8", "h100", "soon"}, web.WhatIfRequest{}, "not a duration"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := whenArgs(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("whenArgs = %+v, %v; want an error mentioning %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("whenArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCancelsJob(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"j42"}, true},
		{[]string{"--json", "J7"}, true},
		{[]string{"r42"}, false},
		{[]string{"42"}, false},
		{[]string{"--server", "http://jump:8080", "r1"}, false},
	} {
		if got := cancelsJob(tc.args); got != tc.want {
			t.Errorf("cancelsJob(%q) = %t, want %t", tc.args, got, tc.want)
		}
	}
}

// TestJobCommandLineErrors checks the job commands' mistakes: exit code 2
// and a message that says what to do, before anything is sent.
func TestJobCommandLineErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--gpus", "4"}, "give the job's command after --"},
		{[]string{"submit", "--gpus", "4", "--"}, "give the job's command after --"},
		{[]string{"submit", "--gpus", "4", "python", "train.py"}, "put the job's command after --, like: gpucal submit --gpus 4 -- python train.py"},
		{[]string{"submit", "--env", "NOVALUE", "--", "x"}, "NAME=value"},
		{[]string{"submit", "--env", "A=1", "--env", "A=2", "--", "x"}, "set twice"},
		{[]string{"submit", "--guess", "soon", "--", "x"}, "--guess"},
		{[]string{"submit", "--params", "lots", "--", "x"}, "--params"},
		{[]string{"submit", "--gpus", "four", "--", "x"}, "invalid value"},
		{[]string{"when"}, "at least 1 argument"},
		{[]string{"when", "8", "h100", "12h", "extra"}, "unexpected argument"},
		{[]string{"when", "eight"}, "not a number of GPUs"},
		{[]string{"queue", "now"}, "unexpected argument"},
		{[]string{"job"}, "at least 1 argument"},
		{[]string{"jobs", "--bogus"}, "flag provided but not defined"},
		{[]string{"cancel", "j1", "j2"}, "unexpected argument"},
		{[]string{"server", "--replan-every", "0s"}, "--replan-every"},
		{[]string{"server", "--replan-every", "often"}, "at least 1s"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			e, _, errOut := testEnv(t)
			if code := run(context.Background(), e, tt.args); code != 2 {
				t.Errorf("exit code = %d, want 2 (stderr: %s)", code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut.String(), tt.want)
			}
		})
	}
}

// TestRenderCalendarJobs checks the glyphs: upper case for a running job,
// lower case for a planned one, '~' for the uncertain end.
func TestRenderCalendarJobs(t *testing.T) {
	day := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	h := func(n int) time.Time { return day.Add(time.Duration(n) * time.Hour) }
	cal := web.Calendar{From: day, To: h(24), GPUs: []web.GPU{{ID: 1, Node: "n1", Index: 0, Model: "a100-80gb"}},
		Items: []web.CalendarItem{
			{Kind: "job", ID: "j1", GPUs: []int64{1}, Start: h(0), End: h(4), EndP90: h(6), Owner: "alice", State: "running", Note: "vit"},
			{Kind: "job", ID: "j2", GPUs: []int64{1}, Start: h(6), End: h(8), StartP90: h(7), EndP90: h(9), Owner: "bob", State: "queued", Planned: true},
		}}
	var out bytes.Buffer
	renderCalendar(&out, cal, h(0), h(24), h(1), time.UTC)
	got := out.String()
	row := strings.Repeat("A", 16) + strings.Repeat("~", 8) + strings.Repeat("a", 8) + strings.Repeat("~", 4) + strings.Repeat(".", 60) // 15-minute cells
	for _, want := range []string{
		"n1/0 a100-80gb   " + row,
		"Lower case = queued jobs",
		"'~' = a job may still be running",
		"  A  j1    alice      -          Mon 7 Jan 00:00–04:00 UTC  1 GPU(s) (90%: end by Mon 06:00) [running]  vit",
		"  a  j2    bob        -          Mon 7 Jan 06:00–08:00 UTC  1 GPU(s) (90%: start by Mon 07:00, end by Mon 09:00) [queued]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("calendar lacks %q:\n%s", want, got)
		}
	}
}

func TestParseProgress(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		in      string
		want    web.ProgressRequest
		wantErr bool
	}{
		{in: "0.42", want: web.ProgressRequest{Fraction: f(0.42)}},
		{in: "42%", want: web.ProgressRequest{Fraction: f(0.42)}},
		{in: " 100% ", want: web.ProgressRequest{Fraction: f(1)}},
		{in: "120/1000", want: web.ProgressRequest{Step: n(120), Total: n(1000)}},
		{in: "120 / 1000", want: web.ProgressRequest{Step: n(120), Total: n(1000)}},
		{in: "42 %", want: web.ProgressRequest{Fraction: f(0.42)}},
		{in: "1.5", wantErr: true},
		{in: "150%", wantErr: true},
		{in: "-0.1", wantErr: true},
		{in: "", wantErr: true},
		{in: "half", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "Inf%", wantErr: true},
		{in: "1/2/3", wantErr: true},
		{in: "1.5/10", wantErr: true},
		{in: "%", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseProgress(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseProgress(%q) error = %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
			t.Errorf("parseProgress(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{"0.42", "42%", "120/1000", "1e-3", "-1/2", "50 %"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, err := parseProgress(s)
		if err != nil {
			return
		}
		fraction := req.Fraction != nil
		steps := req.Step != nil && req.Total != nil
		if fraction == steps {
			t.Fatalf("parseProgress(%q) = %+v: want exactly one form", s, req)
		}
		if fraction && !(*req.Fraction >= 0 && *req.Fraction <= 1) {
			t.Fatalf("parseProgress(%q) = %v, not a fraction between 0 and 1", s, *req.Fraction)
		}
	})
}
