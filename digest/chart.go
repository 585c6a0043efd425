package digest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gpucal/gpucal/core"
)

// The chart's size in pixels: wide enough for 24 hour columns and
// readable in a chat preview.
const (
	Width  = 1200
	Height = 700
	dpi    = 96
)

// topProjects is how many projects get a bar of their own; the rest are
// summed into one "others" bar.
const topProjects = 8

// ChartOptions change how Chart draws.
type ChartOptions struct {
	// FontPath is a TTF or OTF file to draw every text with, for project
	// names in Chinese, say (a font with both Latin and CJK glyphs, such
	// as LXGW WenKai). Without one, the embedded Liberation Sans is used.
	// Either way a project name the font has no glyphs for is drawn as
	// "#N", its rank in the report (ByProject), the number Summary gives
	// it, rather than with its characters silently dropped.
	FontPath string
	// Lang is "zh" for Chinese titles and axis labels; they need a
	// FontPath with CJK glyphs, and without one the chart stays in
	// English. Anything else is English.
	Lang string
	// Zone is the zone the period's dates and the heatmap's weekdays and
	// hours are in (the team's); nil is UTC. See InZone.
	Zone *time.Location
}

// Chart draws the report as a PNG of Width×Height pixels: a title with
// the period and the overall utilisation; on the left, utilisation by
// weekday (rows, Monday on top) and hour (columns, in opts.Zone) with a colour
// scale below it; on the right, GPU-hours by project as horizontal bars,
// most used on top (the top 8, then "others"). The same report and
// options give the same bytes.
func Chart(r core.Report, opts ChartOptions) ([]byte, error) {
	r, zone := InZone(r, opts.Zone)
	f, err := loadFonts(opts.FontPath)
	if err != nil {
		return nil, err
	}
	w := chartWordsEN
	if opts.Lang == "zh" && f.canDraw(chartWordsZH.heat+chartWordsZH.days[0]) {
		w = chartWordsZH
	}
	img := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, Width, Height))), vgimg.UseDPI(dpi))
	dc := draw.New(img)
	const margin = 3 * vg.Millimeter

	// 1. The title across the top.
	top := drawTitle(dc, f, w, r, zone)

	// 2. The heatmap and its colour scale on the left, 62% of the width.
	split := dc.Min.X + (dc.Max.X-dc.Min.X)*0.62
	left := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: dc.Min.X + margin, Y: dc.Min.Y + margin}, Max: vg.Point{X: split - margin, Y: top}}}
	if err := drawHeatmap(left, f, w, r, zone); err != nil {
		return nil, err
	}

	// 3. GPU-hours by project on the right.
	right := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: split + margin, Y: dc.Min.Y + margin}, Max: vg.Point{X: dc.Max.X - 2*margin, Y: top}}}
	if err := drawProjects(right, f, w, r); err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("digest: encoding the chart: %w", err)
	}
	return buf.Bytes(), nil
}

// chartWords are the chart's texts in one language.
type chartWords struct {
	// title is given the period's ends, the utilisation, the GPUs, and
	// the GPU-hours used and offered.
	title                                    func(from, to, zone, util string, gpus int, used, offered string) string
	heat, hour                               string // formats of the zone's name
	scale, projects, gpuHours, others, noUse string
	days                                     [7]string // Sunday first, as time.Weekday
}

var chartWordsEN = chartWords{
	title: func(from, to, zone, util string, gpus int, used, offered string) string {
		return fmt.Sprintf("GPU usage %s to %s (%s): %s utilisation of %d GPUs, %s of %s GPU-hours", from, to, zone, util, gpus, used, offered)
	},
	heat: "Utilisation by weekday and hour (%s)", hour: "hour (%s)", scale: "share of GPUs held by jobs",
	projects: "GPU-hours by project", gpuHours: "GPU-hours", others: "others", noUse: "no GPU use in this period",
	days: [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"},
}

var chartWordsZH = chartWords{
	title: func(from, to, zone, util string, gpus int, used, offered string) string {
		return fmt.Sprintf("GPU 使用情况 %s 至 %s (%s)：%d 块 GPU 利用率 %s，已用 %s / %s GPU 小时", from, to, zone, gpus, util, used, offered)
	},
	heat: "按星期和小时的利用率 (%s)", hour: "小时 (%s)", scale: "作业占用的 GPU 比例",
	projects: "各项目 GPU 小时", gpuHours: "GPU 小时", others: "其他", noUse: "本期没有 GPU 使用",
	days: [7]string{"周日", "周一", "周二", "周三", "周四", "周五", "周六"},
}

// drawTitle writes the title at the top of c and returns the Y below it.
func drawTitle(c draw.Canvas, f fonts, w chartWords, r core.Report, zone *time.Location) vg.Length {
	from, to := periodDates(r.From, r.To, zone)
	title := w.title(from, to, zone.String(), percent(r.Utilisation), r.GPUs, fmtHours(r.Used), fmtHours(r.Capacity))
	st := f.style(15)
	st.XAlign, st.YAlign = draw.XCenter, draw.YTop
	st.Color = color.Black
	pad := 2 * vg.Millimeter
	c.FillText(st, vg.Point{X: c.Center().X, Y: c.Max.Y - pad}, title)
	return c.Max.Y - pad - st.Height(title) - pad
}

// heatColours is light (idle) to dark blue (every GPU held).
func heatColours() palette.ColorMap {
	cm, err := moreland.NewLuminance([]color.Color{
		color.NRGBA{0x08, 0x30, 0x6b, 0xff}, color.NRGBA{0x21, 0x71, 0xb5, 0xff},
		color.NRGBA{0x6b, 0xae, 0xd6, 0xff}, color.NRGBA{0xc6, 0xdb, 0xef, 0xff}, color.NRGBA{0xf7, 0xfb, 0xff, 0xff},
	})
	if err != nil {
		panic(err) // the controls above are ordered by luminance
	}
	cm = palette.Reverse(cm)
	cm.SetMin(0)
	cm.SetMax(1)
	return cm
}

// weekGrid is the heatmap as plotter.GridXYZ: columns are hours, rows are
// days from Sunday at the bottom to Monday on top.
type weekGrid [7][24]float64

func (g *weekGrid) Dims() (c, r int)   { return 24, 7 }
func (g *weekGrid) Z(c, r int) float64 { return min(max(g[rowDay(r)][c], 0), 1) }
func (g *weekGrid) X(c int) float64    { return float64(c) }
func (g *weekGrid) Y(r int) float64    { return float64(r) }

// rowDay is the weekday (time.Weekday) of heatmap row r: row 6, the top,
// is Monday and row 0 Sunday.
func rowDay(r int) int { return (7 - r) % 7 }

func drawHeatmap(c draw.Canvas, f fonts, w chartWords, r core.Report, zone *time.Location) error {
	cm := heatColours()
	grid := weekGrid(r.Heatmap)
	hm := plotter.NewHeatMap(&grid, cm.Palette(256))
	hm.Min, hm.Max = 0, 1

	p := plot.New()
	f.apply(p)
	p.Title.Text = fmt.Sprintf(w.heat, zone)
	p.Title.TextStyle.Font.Size = 13
	p.X.Label.Text = fmt.Sprintf(w.hour, zone)
	p.Add(hm)
	var hours []plot.Tick
	for h := range 24 {
		label := ""
		if h%3 == 0 {
			label = fmt.Sprintf("%02d", h)
		}
		hours = append(hours, plot.Tick{Value: float64(h), Label: label})
	}
	p.X.Tick.Marker = plot.ConstantTicks(hours)
	days := make([]string, 7)
	for row := range 7 {
		days[row] = w.days[rowDay(row)]
	}
	p.NominalY(days...)
	p.X.Min, p.X.Max = -0.5, 23.5
	p.Y.Min, p.Y.Max = -0.5, 6.5

	// The colour scale below the heatmap.
	scale := plot.New()
	f.apply(scale)
	scale.HideY()
	scale.X.Label.Text = w.scale
	scale.Add(&plotter.ColorBar{ColorMap: cm, Colors: 256})
	var pct []plot.Tick
	for i := 0; i <= 4; i++ {
		pct = append(pct, plot.Tick{Value: float64(i) / 4, Label: fmt.Sprintf("%d%%", i*25)})
	}
	scale.X.Tick.Marker = plot.ConstantTicks(pct)

	scaleHeight := (c.Max.Y - c.Min.Y) * 0.16
	scaleCanvas := c
	scaleCanvas.Max.Y = c.Min.Y + scaleHeight
	// Line the scale up with the heatmap's cells: leave room for the day names.
	scaleCanvas.Min.X += p.Y.Tick.Label.Width("Wed") + p.Y.Tick.Label.Width("W")
	heatCanvas := c
	heatCanvas.Min.Y = c.Min.Y + scaleHeight + 4*vg.Millimeter
	p.Draw(heatCanvas)
	scale.Draw(scaleCanvas)
	return nil
}

// projectBar is one bar of the project chart.
type projectBar struct {
	label string
	hours float64
}

// projectBars returns the bars, most used first: the top projects, then
// the rest summed as "others". A name the font cannot draw becomes "#N".
func projectBars(r core.Report, f fonts, w chartWords) []projectBar {
	var bars []projectBar
	var others float64
	for i, u := range r.ByProject {
		if i >= topProjects {
			others += u.GPUHours
			continue
		}
		bars = append(bars, projectBar{label: projectLabel(u.Name, i+1, f), hours: u.GPUHours})
	}
	if len(r.ByProject) > topProjects {
		bars = append(bars, projectBar{label: fmt.Sprintf("%s (%d)", w.others, len(r.ByProject)-topProjects), hours: others})
	}
	return bars
}

// projectLabel is a project's name as the chart shows it: cut to 20
// characters, or "#rank" when the font lacks one of its characters.
func projectLabel(name string, rank int, f fonts) string {
	if !f.canDraw(name) {
		return fmt.Sprintf("#%d", rank)
	}
	if rs := []rune(name); len(rs) > 20 {
		return string(rs[:19]) + "..."
	}
	return name
}

func drawProjects(c draw.Canvas, f fonts, w chartWords, r core.Report) error {
	bars := projectBars(r, f, w)
	p := plot.New()
	f.apply(p)
	p.Title.Text = w.projects
	p.Title.TextStyle.Font.Size = 13
	if len(bars) == 0 {
		p.HideAxes()
		p.Draw(c)
		st := f.style(12)
		st.XAlign, st.YAlign = draw.XCenter, draw.YCenter
		st.Color = color.Gray{Y: 0x60}
		c.FillText(st, c.Center(), w.noUse)
		return nil
	}
	// NominalY puts the first name at the bottom: reverse so the most used is on top.
	values := make(plotter.Values, len(bars))
	names := make([]string, len(bars))
	labels := plotter.XYLabels{XYs: make(plotter.XYs, len(bars)), Labels: make([]string, len(bars))}
	most := 0.0
	for i, b := range bars {
		at := len(bars) - 1 - i
		values[at], names[at] = b.hours, b.label
		labels.XYs[at] = plotter.XY{X: b.hours, Y: float64(at)}
		labels.Labels[at] = fmtHours(b.hours)
		most = math.Max(most, b.hours)
	}
	barWidth := (c.Max.Y - c.Min.Y) / vg.Length(max(len(bars), 4)+2)
	chart, err := plotter.NewBarChart(values, barWidth)
	if err != nil {
		return fmt.Errorf("digest: project bars: %w", err)
	}
	chart.Horizontal = true
	chart.Color = color.NRGBA{0x21, 0x71, 0xb5, 0xff}
	chart.LineStyle.Width = 0
	amounts, err := plotter.NewLabels(labels)
	if err != nil {
		return fmt.Errorf("digest: project labels: %w", err)
	}
	for i := range amounts.TextStyle {
		amounts.TextStyle[i] = f.style(10)
		amounts.TextStyle[i].YAlign = draw.YCenter
	}
	amounts.Offset = vg.Point{X: 2 * vg.Millimeter}
	p.Add(chart, amounts)
	p.NominalY(names...)
	p.X.Label.Text = w.gpuHours
	p.X.Min = 0
	p.X.Max = math.Max(most*1.25, 1) // room for the value labels
	p.X.Tick.Marker = hourTicks{}
	p.Draw(c)
	return nil
}

// hourTicks are plot's default ticks labelled as whole GPU-hours with
// thousands separators.
type hourTicks struct{}

func (hourTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmtHours(ticks[i].Value)
		}
	}
	return ticks
}

// periodDates formats a period's ends for titles, in zone: dates when
// both are midnights there (the end then is the last day included), else
// date and time.
func periodDates(from, to time.Time, zone *time.Location) (string, string) {
	from, to = from.In(zone), to.In(zone)
	midnight := func(t time.Time) bool {
		return t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0
	}
	if midnight(from) && midnight(to) && to.After(from) {
		return from.Format("2006-01-02"), to.Add(-time.Second).Format("2006-01-02")
	}
	return from.Format("2006-01-02 15:04"), to.Format("2006-01-02 15:04")
}

// InZone returns r with its heatmap's weekdays and hours in zone (nil:
// UTC, unchanged), and the zone. The report's heatmap is by UTC hour; it
// is turned by the zone's offset from UTC at the period's end, in whole
// hours (a zone half an hour off UTC is read to the nearer hour, and a
// period across a daylight-saving change is an hour off on one side of
// it).
func InZone(r core.Report, zone *time.Location) (core.Report, *time.Location) {
	if zone == nil {
		return r, time.UTC
	}
	_, offset := r.To.In(zone).Zone()
	shift := int(math.Round(float64(offset) / 3600))
	if shift == 0 {
		return r, zone
	}
	var h [7][24]float64
	for d := range 7 {
		for hour := range 24 {
			at := ((d*24+hour+shift)%168 + 168) % 168
			h[at/24][at%24] = r.Heatmap[d][hour]
		}
	}
	r.Heatmap = h
	return r, zone
}

// percent formats a share as a whole percentage.
func percent(share float64) string { return fmt.Sprintf("%.0f%%", share*100) }

// fmtHours formats GPU-hours: one decimal under 10, whole hours with
// thousands separators above.
func fmtHours(h float64) string {
	switch {
	case h == 0:
		return "0"
	case math.Abs(h) < 10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", h), ".0")
	}
	s := fmt.Sprintf("%.0f", h)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
