package core_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

func TestNodeValidate(t *testing.T) {
	a100 := "NVIDIA A100-SXM4-80GB"
	tests := []struct {
		name    string
		node    core.Node
		edit    func(n *core.Node)
		wantErr string // a fragment of the message; "" for valid
	}{
		{name: "valid", node: coretest.Node("a100-1").GPUs(8, a100).Build()},
		{name: "dotted name", node: coretest.Node("gpu-3.lab").GPUs(1, a100).Build()},
		{name: "one gpu", node: coretest.Node("x").GPUs(1, "NVIDIA L40S").Build()},
		{name: "64 gpus", node: coretest.Node("big").GPUs(64, a100).Build()},
		{name: "upper case name", node: coretest.Node("A100-1").GPUs(1, a100).Build(), wantErr: "lower-case"},
		{name: "empty name", node: coretest.Node("").GPUs(1, a100).Build(), wantErr: "lower-case"},
		{name: "name ends with dash", node: coretest.Node("a100-").GPUs(1, a100).Build(), wantErr: "lower-case"},
		{name: "name too long", node: coretest.Node(strings.Repeat("a", 64)).GPUs(1, a100).Build(), wantErr: "at most 63"},
		{name: "no gpus", node: coretest.Node("a").Build(), wantErr: "between 1 and 64"},
		{name: "65 gpus", node: coretest.Node("a").GPUs(65, a100).Build(), wantErr: "between 1 and 64"},
		{
			name: "duplicate index", node: coretest.Node("a").GPUs(2, a100).Build(),
			edit: func(n *core.Node) { n.GPUs[1].Index = 0 }, wantErr: "index 0 appears twice",
		},
		{
			name: "negative index", node: coretest.Node("a").GPUs(1, a100).Build(),
			edit: func(n *core.Node) { n.GPUs[0].Index = -1 }, wantErr: "out of range",
		},
		{
			name: "duplicate uuid", node: coretest.Node("a").GPUs(2, a100).Build(),
			edit: func(n *core.Node) { n.GPUs[1].UUID = n.GPUs[0].UUID }, wantErr: "appears twice",
		},
		{
			name: "blank uuid", node: coretest.Node("a").GPUs(1, a100).Build(),
			edit: func(n *core.Node) { n.GPUs[0].UUID = "  " }, wantErr: "needs a UUID",
		},
		{
			name: "blank model", node: coretest.Node("a").GPUs(1, "  ").Build(), wantErr: "needs a model name",
		},
		{
			name: "unrecognised model", node: coretest.Node("a").GPUs(1, "Banana Accelerator").Build(), wantErr: "not a GPU model",
		},
		{
			name: "negative memory", node: coretest.Node("a").GPUs(1, a100).Memory(-1).Build(), wantErr: "out of range",
		},
		{
			name: "unknown state", node: coretest.Node("a").GPUs(1, a100).Build(),
			edit: func(n *core.Node) { n.GPUs[0].State = "broken" }, wantErr: "state must be",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			if tt.edit != nil {
				tt.edit(&n)
			}
			err := n.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if got := core.ErrorCode(err); got != core.CodeInvalid {
				t.Fatalf("Validate() code = %q (%v), want %q", got, err, core.CodeInvalid)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %q, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestNodeValidateNormalises(t *testing.T) {
	n := coretest.Node("a").GPUs(1, "NVIDIA L40S").Build()
	n.GPUs[0].Name, n.GPUs[0].UUID, n.GPUs[0].State, n.GPUs[0].Node = " NVIDIA L40S ", " GPU-x ", "", ""
	if err := n.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	want := core.GPU{Node: "a", Index: 0, Name: "NVIDIA L40S", MemoryMiB: coretest.DefaultMemoryMiB, UUID: "GPU-x", State: core.GPUUp}
	if diff := cmp.Diff(want, n.GPUs[0]); diff != "" {
		t.Errorf("GPU after Validate mismatch (-want +got):\n%s", diff)
	}
}

func TestNodeBuilder(t *testing.T) {
	got := coretest.Node("n1").GPUs(2, "NVIDIA H100 80GB HBM3").Down(1).Build()
	want := core.Node{Name: "n1", GPUs: []core.GPU{
		{Node: "n1", Index: 0, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, UUID: "GPU-n1-0", State: core.GPUUp},
		{Node: "n1", Index: 1, Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, UUID: "GPU-n1-1", State: core.GPUDown},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build() mismatch (-want +got):\n%s", diff)
	}
	if got.GPUs[0].Label() != "n1/0" {
		t.Errorf("Label() = %q, want n1/0", got.GPUs[0].Label())
	}
}
