package digest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestSummary compares the digest text with testdata/summary-*.golden.
func TestSummary(t *testing.T) {
	quiet := core.Report{From: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), GPUs: 32, Capacity: 5376}
	busy := sampleReport()
	for i := range 3 {
		busy.ByUser = append(busy.ByUser, core.UsageTotal{Name: []string{"carol", "dave", "erin"}[i], GPUHours: 9.5 - float64(i), Jobs: 1})
	}
	busy.ByUser = append(busy.ByUser, core.UsageTotal{Name: "frank", GPUHours: 0.25, Jobs: 1})
	busy.P90Wait = 26*time.Hour + 10*time.Minute
	busy.NoShows = 2
	tests := []struct {
		name string
		r    core.Report
	}{
		{"week", sampleReport()},
		{"busy", busy},
		{"quiet", quiet},
	}
	for _, tt := range tests {
		for _, lang := range []string{"en", "zh"} {
			t.Run(tt.name+"-"+lang, func(t *testing.T) {
				got := Summary(tt.r, lang, nil)
				path := filepath.Join("testdata", "summary-"+tt.name+"-"+lang+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("Summary mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		d      time.Duration
		en, zh string
	}{
		{0, "0s", "0 秒"},
		{45 * time.Second, "45s", "45 秒"},
		{38*time.Minute + 20*time.Second, "38m", "38 分钟"},
		{time.Hour, "1h", "1 小时"},
		{105 * time.Minute, "1h 45m", "1 小时 45 分钟"},
		{48 * time.Hour, "2d", "2 天"},
		{51 * time.Hour, "2d 3h", "2 天 3 小时"},
	}
	for _, tt := range tests {
		if got := durationEN(tt.d); got != tt.en {
			t.Errorf("durationEN(%s) = %q, want %q", tt.d, got, tt.en)
		}
		if got := durationZH(tt.d); got != tt.zh {
			t.Errorf("durationZH(%s) = %q, want %q", tt.d, got, tt.zh)
		}
	}
}

func TestFmtHours(t *testing.T) {
	for h, want := range map[float64]string{0: "0", 0.25: "0.2", 3: "3", 9.96: "10", 10: "10", 1402.5: "1,402", 1234567: "1,234,567"} {
		if got := fmtHours(h); got != want {
			t.Errorf("fmtHours(%v) = %q, want %q", h, got, want)
		}
	}
}

// TestInZone: in a zone eight hours ahead of UTC, what was Monday 16:00
// UTC is Tuesday 00:00, and Saturday 20:00 UTC is Sunday 04:00; the
// summary names the zone and gives the period's dates there.
func TestInZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip(err)
	}
	var r core.Report
	r.From, r.To = time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	r.Heatmap[time.Monday][16] = 0.5
	r.Heatmap[time.Saturday][20] = 0.25
	got, zone := InZone(r, shanghai)
	if zone != shanghai || got.Heatmap[time.Tuesday][0] != 0.5 || got.Heatmap[time.Sunday][4] != 0.25 || got.Heatmap[time.Monday][16] != 0 {
		t.Errorf("turned heatmap: Tue 00 %v, Sun 04 %v, Mon 16 %v", got.Heatmap[time.Tuesday][0], got.Heatmap[time.Sunday][4], got.Heatmap[time.Monday][16])
	}
	if same, zone := InZone(r, nil); same.Heatmap != r.Heatmap || zone != time.UTC {
		t.Error("InZone(nil) changed the report")
	}
	for lang, want := range map[string]string{"en": "GPU digest, 2026-11-23 to 2026-11-29 (Asia/Shanghai)\n", "zh": "GPU 使用摘要：2026-11-23 至 2026-11-29 (Asia/Shanghai)\n"} {
		if s := Summary(r, lang, shanghai); !strings.HasPrefix(s, want) {
			t.Errorf("%s summary starts %q; want %q", lang, strings.SplitAfter(s, "\n")[0], want)
		}
	}
}
