package core_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
)

func TestParseModel(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   core.Model
		wantOK bool
	}{
		{"nvml a100 sxm", "NVIDIA A100-SXM4-80GB", core.Model{Family: "a100", Memory: "80gb"}, true},
		{"nvml h100 hbm3", "NVIDIA H100 80GB HBM3", core.Model{Family: "h100", Memory: "80gb"}, true},
		{"nvml a100 pcie", "NVIDIA A100-PCIE-40GB", core.Model{Family: "a100", Memory: "40gb"}, true},
		{"nvml tesla v100", "Tesla V100-SXM2-32GB", core.Model{Family: "v100", Memory: "32gb"}, true},
		{"nvml geforce", "NVIDIA GeForce RTX 4090", core.Model{Family: "rtx4090"}, true},
		{"nvml l40s", "NVIDIA L40S", core.Model{Family: "l40s"}, true},
		{"nvml h200", "NVIDIA H200", core.Model{Family: "h200"}, true},
		{"family", "a100", core.Model{Family: "a100"}, true},
		{"family upper case", "H100", core.Model{Family: "h100"}, true},
		{"exact model", "A100-80GB", core.Model{Family: "a100", Memory: "80gb"}, true},
		{"exact model with space", "a100 80gb", core.Model{Family: "a100", Memory: "80gb"}, true},
		{"gib suffix", "a100-80GiB", core.Model{Family: "a100", Memory: "80gb"}, true},
		{"rtx with space", "rtx 4090", core.Model{Family: "rtx4090"}, true},
		{"surrounding space", "  h100 ", core.Model{Family: "h100"}, true},
		{"any", "any", core.Model{}, true},
		{"empty", "", core.Model{}, true},
		{"gpu", "GPU", core.Model{}, true},
		{"banana", "banana", core.Model{}, false},
		{"memory only", "80gb", core.Model{}, false},
		{"digits only", "4090", core.Model{}, false},
		{"huge rtx number", "rtx 123456789", core.Model{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := core.ParseModel(tt.in)
			if ok != tt.wantOK {
				t.Fatalf("ParseModel(%q) ok = %t, want %t", tt.in, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseModel(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestGPUModel(t *testing.T) {
	tests := []struct {
		name      string
		nvml      string
		memoryMiB int64
		want      string
	}{
		{"name has size", "NVIDIA A100-SXM4-80GB", 81920, "a100-80gb"},
		{"name size wins over memory", "NVIDIA A100-PCIE-40GB", 81920, "a100-40gb"},
		{"h100 hbm3", "NVIDIA H100 80GB HBM3", 81559, "h100-80gb"},
		{"v100", "Tesla V100-SXM2-32GB", 32768, "v100-32gb"},
		{"h200 from memory", "NVIDIA H200", 143771, "h200-141gb"},
		{"l40s from memory", "NVIDIA L40S", 46068, "l40s-48gb"},
		{"rtx 4090 from memory", "NVIDIA GeForce RTX 4090", 24564, "rtx4090-24gb"},
		{"unknown memory", "NVIDIA L40S", 0, "l40s"},
		{"memory between sizes", "NVIDIA L40S", 56000, "l40s"},
		{"unrecognised name", "Mystery Card", 0, "mysterycard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := core.GPUModel(tt.nvml, tt.memoryMiB).String()
			if got != tt.want {
				t.Errorf("GPUModel(%q, %d) = %q, want %q", tt.nvml, tt.memoryMiB, got, tt.want)
			}
		})
	}
}

func TestModelMatches(t *testing.T) {
	a100_80 := core.GPUModel("NVIDIA A100-SXM4-80GB", 81920)
	a100_40 := core.GPUModel("NVIDIA A100-PCIE-40GB", 40960)
	h100 := core.GPUModel("NVIDIA H100 80GB HBM3", 81559)
	tests := []struct {
		name    string
		request string
		gpu     core.Model
		want    bool
	}{
		{"family matches 80gb", "a100", a100_80, true},
		{"family matches 40gb", "a100", a100_40, true},
		{"exact matches itself", "a100-80gb", a100_80, true},
		{"exact refuses other size", "a100-80gb", a100_40, false},
		{"family refuses other family", "a100", h100, false},
		{"exact refuses other family", "h100-80gb", a100_80, false},
		{"any matches all", "any", h100, true},
		{"empty matches all", "", a100_40, true},
		{"nvml request", "NVIDIA A100-SXM4-80GB", a100_80, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := core.ParseModel(tt.request)
			if !ok {
				t.Fatalf("ParseModel(%q) failed", tt.request)
			}
			if got := m.Matches(tt.gpu); got != tt.want {
				t.Errorf("%v.Matches(%v) = %t, want %t", m, tt.gpu, got, tt.want)
			}
		})
	}
}

func FuzzParseModel(f *testing.F) {
	for _, s := range []string{
		"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA A100-PCIE-40GB", "Tesla V100-SXM2-32GB",
		"NVIDIA GeForce RTX 4090", "NVIDIA L40S", "NVIDIA H200", "a100", "A100-80GB", "rtx 4090", "any", "",
		"banana", "gpu 80g", "rtx 99999999", "a1-0001g", "(h100/80gib)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := core.ParseModel(s)
		if !ok {
			if m != (core.Model{}) {
				t.Errorf("ParseModel(%q) = %v, false; want the zero Model when it fails", s, m)
			}
			return
		}
		again, ok := core.ParseModel(m.String())
		if !ok || again != m {
			t.Errorf("ParseModel(%q) = %#v, whose String %q re-parses to %#v, %t", s, m, m.String(), again, ok)
		}
		if !m.Matches(m) {
			t.Errorf("%#v does not match itself", m)
		}
	})
}
