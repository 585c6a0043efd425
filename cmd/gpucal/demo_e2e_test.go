package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/web"
)

// TestDemoRunsJobs is the demo check: `gpucal demo` starts its
// nodes through real agent code on simulated GPUs; they are listed ready
// with live readings, and a job submitted there runs, logs and finishes.
func TestDemoRunsJobs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent runs jobs on Linux only")
	}
	t.Parallel()
	url, token := startDemo(t, `Admin API token: (\S+)`)
	c := &web.Client{BaseURL: url, Token: token}
	ctx := context.Background()

	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 4 {
		t.Fatalf("nodes: %d, %v", len(nodes), err)
	}
	for _, n := range nodes {
		if n.State != "ready" || len(n.GPUs) != 8 || n.GPUs[0].Telemetry == nil || n.GPUs[0].Telemetry.TempC <= 0 {
			t.Errorf("node %s: state %q, %d GPUs, telemetry %+v; want ready with readings", n.Name, n.State, len(n.GPUs), n.GPUs[0].Telemetry)
		}
	}

	j, err := c.Submit(ctx, web.SubmitRequest{GPUs: 2, Model: "h100", Name: "demo-train", Hints: &web.Hints{Guess: "1m"},
		Command: []string{"sh", "-c", `for i in 1 2 3 4 5 6 7 8; do echo "Epoch $i/8"; sleep 0.5; done`}}, "")
	if err != nil {
		t.Fatal(err)
	}
	busy := false
	waitFor(t, 60*time.Second, j.ID+" to succeed", func() bool {
		got, err := c.Job(ctx, j.ID)
		if err != nil {
			return false
		}
		if got.State == "running" && !busy {
			ns, _ := c.Nodes(ctx)
			for _, n := range ns {
				for _, g := range n.GPUs {
					busy = busy || (g.Job != nil && g.Job.ID == j.ID && g.Telemetry != nil && g.Telemetry.Util > 50)
				}
			}
		}
		return got.State == "succeeded"
	})
	if !busy {
		t.Error("the job's simulated GPUs never read busy while it ran")
	}
	var log string
	waitFor(t, 10*time.Second, "its whole log", func() bool {
		p, err := c.Log(ctx, j.ID, 0, 0)
		log = string(p.Data)
		return err == nil && p.Done
	})
	if !strings.Contains(log, "Epoch 1/8\n") || !strings.HasSuffix(log, "Epoch 8/8\n") {
		t.Errorf("log %q", log)
	}
	got, _ := c.Job(ctx, j.ID)
	if len(got.Runs) != 1 || got.Runs[0].ExitCode != 0 || got.Runs[0].PID == 0 {
		t.Errorf("runs %+v", got.Runs)
	}
}

// startDemo runs `gpucal demo` on a free port until the test ends and
// returns its address and the token its output names after the first
// match of tokenRe (a pattern with one group), once both are printed.
func startDemo(t *testing.T, tokenRe string) (url, token string) {
	t.Helper()
	cmd := exec.Command(mustCgoBinary(t), "demo", "--addr", freeAddr(t))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME=", "XDG_CONFIG_HOME=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	running, named := regexp.MustCompile(`gpucal demo is running at (\S+)`), regexp.MustCompile(tokenRe)
	found := make(chan [2]string, 1)
	go func() {
		var url string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := running.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
			if m := named.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- [2]string{url, m[1]}:
				default:
				}
			}
		}
	}()
	select {
	case got := <-found:
		return got[0], got[1]
	case <-time.After(90 * time.Second):
		t.Fatal("the demo did not announce itself within 90 s")
	}
	return "", ""
}
