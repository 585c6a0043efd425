package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// prometheusOwn are the series Prometheus makes itself: one set per
// target, and its alerts.
var prometheusOwn = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added", "ALERTS", "ALERTS_FOR_STATE"}

// declaredMetrics reads the module's Go sources (tests and this folder
// left out) and returns the name of every metric they declare: a
// prometheus.*Opts literal's Namespace, Subsystem and Name, and the first
// argument of prometheus.NewDesc and of helpers named like it (the agent's
// newGPUMetric), with the series a histogram or summary adds.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "../deploy" || d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
					return true
				}
				parts := map[string]string{}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							parts[key.Name] = stringLit(kv.Value)
						}
					}
				}
				if parts["Name"] == "" {
					return true
				}
				var words []string
				for _, k := range []string{"Namespace", "Subsystem", "Name"} {
					if parts[k] != "" {
						words = append(words, parts[k])
					}
				}
				addSeries(names, strings.Join(words, "_"), sel.Sel.Name)
			case *ast.CallExpr:
				var fn string
				switch f := n.Fun.(type) {
				case *ast.SelectorExpr:
					fn = f.Sel.Name
				case *ast.Ident:
					fn = f.Name
				}
				if (fn == "NewDesc" || strings.HasSuffix(fn, "Metric")) && len(n.Args) > 0 {
					if name := stringLit(n.Args[0]); name != "" {
						names[name] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func addSeries(names map[string]bool, name, opts string) {
	names[name] = true
	switch opts {
	case "HistogramOpts":
		names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
	case "SummaryOpts":
		names[name+"_sum"], names[name+"_count"] = true, true
	}
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// runtimeMetrics are the Go runtime's and the process's metrics, which
// the server registers (web.NewMetrics), gathered from the collectors.
func runtimeMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		addSeries(names, f.GetName(), map[string]string{"HISTOGRAM": "HistogramOpts", "SUMMARY": "SummaryOpts"}[f.GetType().String()])
	}
	return names
}

// knownMetrics is every name a query of the kit may use.
func knownMetrics(t *testing.T) map[string]bool {
	known := declaredMetrics(t)
	maps.Copy(known, runtimeMetrics(t))
	for _, n := range prometheusOwn {
		known[n] = true
	}
	qs, err := Queries(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if name, ok := strings.CutPrefix(q.Where, "rule "); ok && strings.Contains(name, ":") {
			known[name] = true // a recording rule's series
		}
	}
	return known
}

// TestDeclaredMetrics checks the scan of the sources against metrics known
// to exist, so that a scan that misses declarations fails here rather than
// passing every query by accident.
func TestDeclaredMetrics(t *testing.T) {
	got := declaredMetrics(t)
	for _, want := range []string{
		"gpucal_nodes", "gpucal_gpus", "gpucal_leader", "gpucal_leader_changes_total", "gpucal_notifications_total",
		"gpucal_booking_requests_total", "gpucal_http_request_duration_seconds_bucket", "gpucal_inventory_scrape_errors_total",
		"gpucal_agent_nvml_up", "gpucal_agent_heartbeat_seconds_bucket", "gpucal_agent_jobs", "gpucal_agent_gpu_read_seconds_count",
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	} {
		if !got[want] {
			t.Errorf("the scan of the sources did not find %s", want)
		}
	}
	for name := range got {
		if !strings.HasPrefix(name, "gpucal_") && !strings.HasPrefix(name, "DCGM_FI_") {
			t.Errorf("the scan found %q, which is neither gpucal's nor DCGM's", name)
		}
	}
	if rt := runtimeMetrics(t); !rt["go_goroutines"] || !rt["process_resident_memory_bytes"] {
		t.Errorf("runtime metrics %v lack go_goroutines or process_resident_memory_bytes", slices.Sorted(maps.Keys(rt)))
	}
}

// TestQueriesNameExportedMetrics: every metric a rule or dashboard reads is
// one gpucal exports (or Prometheus makes), so no panel stays empty and no
// alert waits on a series that never comes.
func TestQueriesNameExportedMetrics(t *testing.T) {
	known := knownMetrics(t)
	qs, err := Queries(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 40 {
		t.Fatalf("%d queries in the rules and dashboards, want the kit's (over 40)", len(qs))
	}
	for _, q := range qs {
		names := MetricNames(q.Expr)
		if len(names) == 0 && !strings.Contains(q.Expr, "vector(") {
			t.Errorf("%s %s: %q names no metric", q.File, q.Where, q.Expr)
		}
		for _, n := range names {
			if !known[n] {
				t.Errorf("%s %s: %s is not a metric gpucal exports (%q)", q.File, q.Where, n, q.Expr)
			}
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="gpucal"} == 0`, []string{"up"}},
		{`(sum(gpucal_leader) or vector(0)) < 1`, []string{"gpucal_leader"}},
		{`sum by (instance, code) (rate(gpucal_http_requests_total{code=~"5.."}[5m])) / on (instance) group_left (x) sum(rate(b_total[$__rate_interval]))`,
			[]string{"b_total", "gpucal_http_requests_total"}},
		{`histogram_quantile(0.95, sum without (pod) (rate(a_bucket[1h30m] offset 5m)))`, []string{"a_bucket"}},
		{`DCGM_FI_DEV_FB_USED{Hostname=~"$Hostname", gpu=~"${gpu}"} * 1024 / 3.6e9 + 1e-3`, []string{"DCGM_FI_DEV_FB_USED"}},
		{`max_over_time(x[10m:1m]) and bool y unless z # a comment naming w`, []string{"x", "y", "z"}},
		{`label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)`, []string{"DCGM_FI_DEV_GPU_UTIL", "Hostname"}},
		{`job:gpus:sum + Inf`, []string{"job:gpus:sum"}},
	} {
		if diff := cmp.Diff(tc.want, MetricNames(tc.expr)); diff != "" {
			t.Errorf("MetricNames(%q) (-want +got):\n%s", tc.expr, diff)
		}
	}
}

func TestExpand(t *testing.T) {
	got := Expand(`sum(rate(x{node=~"$node",gpu=~"${gpu}"}[$__rate_interval])) / increase(y[$__range])`)
	want := `sum(rate(x{node=~".*",gpu=~".*"}[5m])) / increase(y[5m])`
	if got != want {
		t.Errorf("Expand = %s, want %s", got, want)
	}
}
