package gpu

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedReader returns the same devices, or error, on every Read.
type fixedReader struct {
	devices []Device
	err     error
}

func (r *fixedReader) Read(context.Context) ([]Device, error) { return r.devices, r.err }
func (r *fixedReader) Close() error                           { return nil }

const allFields = FieldMemory | FieldGPUUtil | FieldMemCopyUtil | FieldTemperature | FieldPower |
	FieldEnergy | FieldSMClock | FieldMemClock | FieldXID | FieldProcesses

// twoH100s are two H100s with fixed readings; the first runs a job.
func twoH100s() []Device {
	return []Device{
		{
			Index: 0, Minor: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: "00000000:18:00.0", Present: allFields,
			MemoryTotalMiB: 81559, MemoryUsedMiB: 40960, MemoryFreeMiB: 40599,
			GPUUtil: 97, MemCopyUtil: 41, TemperatureC: 64, PowerW: 612.5, EnergyMilliJoules: 123456789,
			SMClockMHz: 1980, MemClockMHz: 2619, Processes: []Process{{PID: 4242, UsedMiB: 40960, UsedKnown: true}},
		},
		{
			Index: 1, Minor: 1, UUID: "GPU-11111111-1111-1111-1111-111111111111", Name: "NVIDIA H100 80GB HBM3",
			PCIBusID: "00000000:2A:00.0", Present: allFields,
			MemoryTotalMiB: 81559, MemoryUsedMiB: 0, MemoryFreeMiB: 81559,
			TemperatureC: 31, PowerW: 71.25, EnergyMilliJoules: 6048000000, SMClockMHz: 345, MemClockMHz: 2619,
		},
	}
}

// scrape serves e on a fresh registry and returns the text exposition.
func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the scrape: %v", err)
	}
	return string(body)
}

// exporterOver samples r once and returns an Exporter over the sample.
func exporterOver(t *testing.T, r Reader, cfg ExporterConfig) *Exporter {
	t.Helper()
	s := NewSampler(r, SamplerConfig{})
	s.Refresh(t.Context())
	return NewExporter(s, cfg)
}

func TestExporterGolden(t *testing.T) {
	// In a synctest bubble the clock stands still while the read runs, so
	// the read histogram is the same on every run.
	synctest.Test(t, func(t *testing.T) {
		e := exporterOver(t, &fixedReader{devices: twoH100s()}, ExporterConfig{
			Hostname: "gpu-node-1",
			Labels: func(uuid string) JobLabels {
				if uuid == "GPU-00000000-0000-0000-0000-000000000000" {
					return JobLabels{Job: "j1234", User: "ada", Project: "llm"}
				}
				return JobLabels{}
			},
		})
		got := scrape(t, e)
		golden := filepath.Join("testdata", "two_h100.prom")
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("exposition mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestExporterLeavesOutUnsupported(t *testing.T) {
	devices := twoH100s()
	devices[1].Present &^= FieldPower | FieldXID
	got := scrape(t, exporterOver(t, &fixedReader{devices: devices}, ExporterConfig{}))

	tests := []struct {
		metric, uuidPrefix string
		want               bool
	}{
		{"DCGM_FI_DEV_POWER_USAGE", "GPU-0", true},
		{"DCGM_FI_DEV_POWER_USAGE", "GPU-1", false},
		{"DCGM_FI_DEV_XID_ERRORS", "GPU-1", false},
		{"DCGM_FI_DEV_GPU_TEMP", "GPU-1", true},
	}
	for _, tt := range tests {
		t.Run(tt.metric+"/"+tt.uuidPrefix, func(t *testing.T) {
			if has := hasSeries(got, tt.metric, tt.uuidPrefix); has != tt.want {
				t.Errorf("exposition has %s for %s: %v, want %v\n%s", tt.metric, tt.uuidPrefix, has, tt.want, got)
			}
		})
	}
}

// hasSeries reports whether the exposition has a sample of metric for a
// GPU whose UUID starts with uuidPrefix.
func hasSeries(exposition, metric, uuidPrefix string) bool {
	for line := range strings.Lines(exposition) {
		if strings.HasPrefix(line, metric+"{") && strings.Contains(line, `UUID="`+uuidPrefix) {
			return true
		}
	}
	return false
}

func TestExporterNVMLUp(t *testing.T) {
	tests := []struct {
		name        string
		reader      Reader
		read        bool
		wantUp      string
		wantDevices bool
	}{
		{name: "read succeeded", reader: &fixedReader{devices: twoH100s()}, read: true, wantUp: "gpucal_agent_nvml_up 1", wantDevices: true},
		{name: "read failed", reader: &fixedReader{err: errors.New("GPU 1: GetMemoryInfo: ERROR_UNKNOWN")}, read: true, wantUp: "gpucal_agent_nvml_up 0"},
		{name: "not read yet", reader: &fixedReader{devices: twoH100s()}, wantUp: "gpucal_agent_nvml_up 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSampler(tt.reader, SamplerConfig{})
			if tt.read {
				s.Refresh(t.Context())
			}
			got := scrape(t, NewExporter(s, ExporterConfig{}))
			if !strings.Contains(got, tt.wantUp+"\n") {
				t.Errorf("exposition lacks %q:\n%s", tt.wantUp, got)
			}
			if has := strings.Contains(got, "DCGM_FI_DEV_GPU_UTIL{"); has != tt.wantDevices {
				t.Errorf("exposition has GPU series: %v, want %v", has, tt.wantDevices)
			}
		})
	}
}
