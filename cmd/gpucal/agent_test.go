//go:build cgo

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestAgentMetrics runs `gpucal agent` on two simulated H100s and scrapes
// it: every DCGM metric is there for both GPUs, labelled as the DCGM
// exporter labels them, and the agent stops cleanly with its context.
func TestAgentMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stdout := io.Pipe()
	var errOut bytes.Buffer
	e := &env{stdout: stdout, stderr: &errOut, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		done <- runAgent(ctx, e, []string{"--fake-gpus", "2xH100", "--metrics-addr", "127.0.0.1:0", "--name", "node-7", "--interval", "100ms"})
		stdout.Close()
	}()
	line := make([]byte, 512)
	n, err := out.Read(line)
	if err != nil {
		t.Fatalf("reading the agent's first line: %v (stderr: %s)", err, errOut.String())
	}
	go io.Copy(io.Discard, out)
	url := regexp.MustCompile(`http://\S+/metrics`).FindString(string(line[:n]))
	if !strings.HasPrefix(string(line[:n]), "gpucal agent on node-7: 2 simulated GPUs (2xH100)") || url == "" {
		t.Fatalf("first line %q: want the node, its GPUs and the metrics URL", line[:n])
	}

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
		"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"} {
		f := families[name]
		if f == nil || len(f.GetMetric()) != 2 {
			t.Errorf("%s: %v, want one series per GPU", name, f)
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["Hostname"] != "node-7" || labels["modelName"] != "NVIDIA H100 80GB HBM3" || labels["UUID"] == "" || labels["gpu"] == "" {
				t.Errorf("%s labels %v", name, labels)
			}
		}
	}
	if up := families["gpucal_agent_nvml_up"]; up == nil || up.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("gpucal_agent_nvml_up = %v, want 1", up)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent stopped with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop with its context")
	}
}

func TestAgentRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"agent", "--fake-gpus", "8xV900"},
		{"agent", "--fake-gpus", "0xH100"},
		{"agent", "--interval", "1ms", "--fake-gpus", "1xH100"},
		{"agent", "extra"},
	} {
		var out, errOut bytes.Buffer
		e := &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
		if code := run(context.Background(), e, args); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}
