package gpu

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFake(t *testing.T) {
	tests := []struct {
		spec    string
		want    []FakeGPU
		wantErr string // a part of the error; "" for none
	}{
		{spec: "8xH100", want: []FakeGPU{{8, "H100"}}},
		{spec: "1xH200", want: []FakeGPU{{1, "H200"}}},
		{spec: "2xA100-80GB", want: []FakeGPU{{2, "A100-80GB"}}},
		{spec: "8xH100,2xA100-80GB", want: []FakeGPU{{8, "H100"}, {2, "A100-80GB"}}},
		{spec: " 4Xh100 , b200 ", want: []FakeGPU{{4, "H100"}, {1, "B200"}}},
		{spec: "64xA30", want: []FakeGPU{{64, "A30"}}},
		{spec: "", wantErr: "is empty"},
		{spec: "0xH100", wantErr: "from 1 to 64"},
		{spec: "65xH100", wantErr: "from 1 to 64"},
		{spec: "99999999999999999999xH100", wantErr: "from 1 to 64"},
		{spec: "40xH100,40xH200", wantErr: "more than 64 GPUs"},
		{spec: "8xV100", wantErr: `unknown model "V100"; known models are H100`},
		{spec: "2xA100", wantErr: "say A100-40GB or A100-80GB"},
		{spec: "8xH100,", wantErr: "empty item"},
		{spec: "8x", wantErr: `unknown model ""`},
		{spec: "-1xH100", wantErr: `unknown model "-1xH100"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseFake(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseFake(%q) error = %v, want one containing %q", tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFake(%q): %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFake(%q) mismatch (-want +got):\n%s", tt.spec, diff)
			}
		})
	}
}

func FuzzParseFake(f *testing.F) {
	for _, seed := range []string{"8xH100", "2xA100-80GB,1xh200", "b200", "0xH100", "65xA30", "8x", ",", "1x1xH100"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := ParseFake(spec)
		if err != nil {
			return
		}
		total := 0
		for _, g := range got {
			if g.Count < 1 || !slices.Contains(fakeModels, g.Model) {
				t.Fatalf("ParseFake(%q) accepted %+v", spec, g)
			}
			total += g.Count
		}
		if total < 1 || total > MaxFakeGPUs {
			t.Fatalf("ParseFake(%q) accepted %d GPUs", spec, total)
		}
		again, err := ParseFake(FormatFake(got))
		if err != nil {
			t.Fatalf("ParseFake(FormatFake(%v)): %v", got, err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("round trip of %q changed it (-first +again):\n%s", spec, diff)
		}
	})
}
