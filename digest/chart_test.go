package digest

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
)

var chartDir = flag.String("chartdir", "", "write the test charts to this folder, to look at them")

// sampleReport is a week of a small cluster: busy working days, quieter
// nights and a weekend, a few projects, one with a Chinese name.
func sampleReport() core.Report {
	r := core.Report{
		From: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		GPUs: 32, Capacity: 5376, Used: 2533.4, Utilisation: 2533.4 / 5376,
		ByProject: []core.UsageTotal{{Name: "nlp", GPUHours: 1402.2, Jobs: 31}, {Name: "vision", GPUHours: 1020.5, Jobs: 22},
			{Name: "视觉", GPUHours: 80, Jobs: 3}, {Name: "(none)", GPUHours: 30.7, Jobs: 4}},
		ByUser:       []core.UsageTotal{{Name: "alice", GPUHours: 1650.1, Jobs: 35}, {Name: "bob", GPUHours: 883.3, Jobs: 25}},
		ByType:       []core.UsageTotal{{Name: "train", GPUHours: 1900, Jobs: 8}, {Name: "finetune", GPUHours: 500, Jobs: 20}, {Name: "eval", GPUHours: 133.4, Jobs: 32}},
		Reservations: 6, Booked: 312, BookedUsed: 248.5, NoShows: 1,
		Started: 60, AvgWait: 38 * time.Minute, P90Wait: 105 * time.Minute,
		Finished: 58, Accuracy: 0.613,
	}
	for d := range 7 {
		for h := range 24 {
			v := 0.15
			if h >= 9 && h < 19 {
				v = 0.55 + 0.04*float64(h-9)
			}
			if d == 0 || d == 6 {
				v /= 3
			}
			r.Heatmap[d][h] = min(v, 1)
		}
	}
	return r
}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	return img
}

// colours counts the distinct colours of img.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func TestChart(t *testing.T) {
	many := sampleReport()
	for i := range 12 {
		many.ByProject = append(many.ByProject, core.UsageTotal{Name: "p" + string(rune('a'+i)), GPUHours: float64(20 - i), Jobs: 1})
	}
	tests := []struct {
		name       string
		r          core.Report
		minColours int
	}{
		{"week", sampleReport(), 50},
		{"many projects", many, 50},
		{"no use", core.Report{From: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), GPUs: 32, Capacity: 5376}, 5},
		{"empty", core.Report{}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Chart(tt.r, ChartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			img := decode(t, b)
			if got := img.Bounds().Size(); got != (image.Point{X: Width, Y: Height}) {
				t.Errorf("size %v, want %dx%d", got, Width, Height)
			}
			if n := colours(img); n < tt.minColours {
				t.Errorf("%d colours, want at least %d: the chart looks blank", n, tt.minColours)
			}
			again, err := Chart(tt.r, ChartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, again) {
				t.Error("the same report gave different bytes")
			}
			if *chartDir != "" {
				if err := os.WriteFile(filepath.Join(*chartDir, tt.name+".png"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestChartFont(t *testing.T) {
	if _, err := Chart(sampleReport(), ChartOptions{FontPath: filepath.Join(t.TempDir(), "missing.ttf")}); err == nil {
		t.Error("a missing font file: no error")
	}
	bad := filepath.Join(t.TempDir(), "bad.ttf")
	os.WriteFile(bad, []byte("not a font"), 0o644)
	if _, err := Chart(sampleReport(), ChartOptions{FontPath: bad}); err == nil {
		t.Error("a file that is not a font: no error")
	}
}

// TestChartFontFile draws with a font file of the system when there is
// one: DejaVu Sans has no CJK glyphs, so the Chinese name still becomes
// "#3" and a Chinese chart falls back to English.
func TestChartFontFile(t *testing.T) {
	const dejavu = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
	if _, err := os.Stat(dejavu); err != nil {
		t.Skip("no DejaVu Sans on this machine")
	}
	f, err := loadFonts(dejavu)
	if err != nil {
		t.Fatal(err)
	}
	if got := projectLabel("视觉", 3, f); got != "#3" {
		t.Errorf("projectLabel = %q, want #3", got)
	}
	if got := projectLabel("café", 2, f); got != "café" {
		t.Errorf("projectLabel = %q, want café", got)
	}
	zh, err := Chart(sampleReport(), ChartOptions{FontPath: dejavu, Lang: "zh"})
	if err != nil {
		t.Fatal(err)
	}
	en, err := Chart(sampleReport(), ChartOptions{FontPath: dejavu})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(zh, en) {
		t.Error("a Chinese chart with a font without CJK glyphs differs from the English one")
	}
	if def, _ := Chart(sampleReport(), ChartOptions{}); bytes.Equal(def, en) {
		t.Error("the font file made no difference")
	}
	decode(t, en)
}

// TestChartCJKFont draws with LXGW WenKai (Debian fonts-lxgw-wenkai) when
// it is installed: Chinese names are drawn as they are and --lang zh
// gives Chinese titles.
func TestChartCJKFont(t *testing.T) {
	const wenkai = "/usr/share/fonts/truetype/lxgw-wenkai/LXGWWenKai-Regular.ttf"
	if _, err := os.Stat(wenkai); err != nil {
		t.Skip("no LXGW WenKai on this machine (apt-get install fonts-lxgw-wenkai)")
	}
	f, err := loadFonts(wenkai)
	if err != nil {
		t.Fatal(err)
	}
	if got := projectLabel("视觉", 3, f); got != "视觉" {
		t.Errorf("projectLabel = %q, want 视觉", got)
	}
	zh, err := Chart(sampleReport(), ChartOptions{FontPath: wenkai, Lang: "zh"})
	if err != nil {
		t.Fatal(err)
	}
	en, err := Chart(sampleReport(), ChartOptions{FontPath: wenkai})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(zh, en) {
		t.Error("--lang zh drew the same chart as English")
	}
	if got := decode(t, zh).Bounds().Size(); got != (image.Point{X: Width, Y: Height}) {
		t.Errorf("size %v", got)
	}
}

func TestProjectLabels(t *testing.T) {
	f := defaultFonts()
	tests := []struct {
		name string
		rank int
		want string
	}{
		{"nlp", 1, "nlp"},
		{"café", 2, "café"}, // Liberation has Latin-1
		{"视觉", 3, "#3"},
		{"nlp-视觉", 4, "#4"},
		{"a-very-long-project-name-indeed", 5, "a-very-long-project..."},
	}
	for _, tt := range tests {
		if got := projectLabel(tt.name, tt.rank, f); got != tt.want {
			t.Errorf("projectLabel(%q, %d) = %q, want %q", tt.name, tt.rank, got, tt.want)
		}
	}
}

func BenchmarkChart(b *testing.B) {
	r := sampleReport()
	for b.Loop() {
		if _, err := Chart(r, ChartOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
