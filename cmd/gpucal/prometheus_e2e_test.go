package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/deploy"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// TestPrometheusScrapes runs a real Prometheus (Debian's package; CI
// installs it) against a real server and a real agent on two simulated
// H100s running a job, with the kit's alert rules loaded, and reads it
// back through its HTTP API: both targets are up, the server's inventory,
// leader and the agent's DCGM series are stored (the job that holds a GPU
// as hpc_job, as the rules and dashboards expect), every rule
// evaluates without error, and every query of the dashboards and rules
// (deploy/) is one this Prometheus accepts.
func TestPrometheusScrapes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent runs on Linux only")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian: apt-get install prometheus; .ci/run installs it)")
	}
	t.Parallel()
	ctx := context.Background()
	s := startServer(t, storetest.SQLite(t), agentServerFlags...)
	admin := s.client("t0")
	metricsAddr := freeAddr(t)
	ag := &agentProc{t: t, stderr: &bytes.Buffer{}, args: []string{"agent", "--server", s.url, "--name", "prom-1",
		"--fake-gpus", "2xH100", "--state-dir", t.TempDir(), "--metrics-addr", metricsAddr, "--interval", "200ms",
		"--run-as-self", "--join-token", joinTokenFor(t, s)}}
	ag.start()
	t.Cleanup(ag.kill)
	waitFor(t, 60*time.Second, "prom-1 to join", func() bool { return nodeState(t, admin, "prom-1") == "ready" })
	j, err := admin.Submit(ctx, web.SubmitRequest{GPUs: 1, Model: "h100", Name: "scraped", Command: []string{"sleep", "120"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.CancelJob(ctx, j.ID) }) // the agent stops it while it lives

	// Prometheus: both targets every second, the kit's rules, storage and
	// web on loopback in the test's folders.
	dir := t.TempDir()
	rules, err := filepath.Abs("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	serverURL, _ := url.Parse(s.url)
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: gpucal
    static_configs: [{targets: [%q]}]
  - job_name: gpucal-agent
    static_configs: [{targets: [%q]}]
`, rules, serverURL.Host, metricsAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	webAddr := freeAddr(t)
	var promLog bytes.Buffer
	prom := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+webAddr, "--log.level=warn")
	prom.Stdout, prom.Stderr = &lockedWriter{w: &promLog}, &lockedWriter{w: &promLog}
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prom.Process.Kill()
		prom.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	})
	api := "http://" + webAddr + "/api/v1/"

	// query runs an instant query; it fails the test on an error status
	// unless tolerate is set (Prometheus may still be starting).
	type sample struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	query := func(q string) ([]sample, error) {
		resp, err := http.Get(api + "query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var body struct {
			Status, Error string
			Data          struct {
				ResultType string          `json:"resultType"`
				Result     json.RawMessage `json:"result"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return nil, err
		}
		if body.Status != "success" {
			return nil, fmt.Errorf("%s: %s", q, body.Error)
		}
		var out []sample
		if body.Data.ResultType == "vector" {
			if err := json.Unmarshal(body.Data.Result, &out); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	has := func(q string, n int) func() bool {
		return func() bool {
			got, err := query(q)
			return err == nil && len(got) >= n
		}
	}
	started := time.Now()
	waitFor(t, 60*time.Second, "both targets up", has(`up{job=~"gpucal|gpucal-agent"} == 1`, 2))
	t.Logf("both targets up in Prometheus %s after it started", time.Since(started).Round(10*time.Millisecond))
	// The agent labels a held GPU's series hpc_job="j…" (DCGM's name for a
	// batch job), beside Prometheus' own scrape job.
	waitFor(t, 30*time.Second, j.ID+" as hpc_job on its GPU", has(fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{job="gpucal-agent",hpc_job=%q}`, j.ID), 1))
	waitFor(t, 30*time.Second, "the server's GPUs", has(`gpucal_gpus{job="gpucal"}`, 1))
	gpus, _ := query(`gpucal_gpus`)
	t.Logf("gpucal_gpus: %v", gpus)
	waitFor(t, 30*time.Second, "the server's running GPU", has(`gpucal_gpus{job="gpucal",model="h100-80gb",status="running"} == 1`, 1))
	waitFor(t, 30*time.Second, "the server's nodes", has(`gpucal_nodes{job="gpucal",state="ready"} == 1`, 1))
	waitFor(t, 30*time.Second, "the leader", has(`gpucal_leader{job="gpucal"} == 1`, 1))
	waitFor(t, 30*time.Second, "the agent's DCGM series", has(`DCGM_FI_DEV_GPU_UTIL{job="gpucal-agent",Hostname="prom-1",modelName="NVIDIA H100 80GB HBM3"}`, 2))
	waitFor(t, 30*time.Second, "the agent's own metrics", has(`gpucal_agent_nvml_up{job="gpucal-agent"} == 1`, 1))

	// Every rule of the kit evaluates without error.
	waitFor(t, 30*time.Second, "every rule evaluated", func() bool {
		resp, err := http.Get(api + "rules")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Data struct {
				Groups []struct {
					Name  string
					Rules []struct{ Name, Health, LastError string }
				}
			}
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data.Groups) == 0 {
			return false
		}
		n := 0
		for _, g := range body.Data.Groups {
			for _, r := range g.Rules {
				if r.Health == "err" {
					t.Fatalf("rule %s: %s", r.Name, r.LastError)
				}
				if r.Health != "ok" {
					return false
				}
				n++
			}
		}
		t.Logf("%d rules in %d groups evaluated", n, len(body.Data.Groups))
		return true
	})

	// Every query of the dashboards and rules is valid PromQL to this
	// Prometheus; most return data from these two targets once each has
	// been scraped a few times (rates need two samples).
	waitFor(t, 30*time.Second, "five scrapes of each target", has(`count_over_time(up{job=~"gpucal|gpucal-agent"}[1m]) >= 5`, 2))
	qs, err := deploy.Queries("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	withData := 0
	var empty []string
	for _, q := range qs {
		got, err := query(deploy.Expand(q.Expr))
		if err != nil {
			t.Errorf("%s %s: %v", q.File, q.Where, err)
			continue
		}
		if len(got) > 0 {
			withData++
		} else {
			empty = append(empty, q.File+" "+q.Where)
		}
	}
	t.Logf("%d queries of the kit accepted by Prometheus, %d with data now; empty (no such event yet, or an alert that does not fire): %s",
		len(qs), withData, strings.Join(empty, "; "))
	if withData < len(qs)/2 {
		t.Errorf("only %d of %d queries return data", withData, len(qs))
	}
}
