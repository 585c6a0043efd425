package deploy

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDashboards checks deploy/grafana: the three dashboards parse, have
// distinct uids, every panel has an id of its own and a place, and every
// query panel reads Prometheus through the dashboard's datasource
// variable, with a query in each target. (The queries' metrics are
// checked by TestQueriesNameExportedMetrics, their syntax by a real
// Prometheus in cmd/gpucal's TestPrometheusScrapes.)
func TestDashboards(t *testing.T) {
	files, _ := filepath.Glob("grafana/*.json")
	want := map[string]bool{"grafana/gpucal-cluster.json": true, "grafana/gpucal-queue.json": true, "grafana/gpucal-gpus.json": true}
	if len(files) != len(want) {
		t.Errorf("dashboards %v, want %d", files, len(want))
	}
	uids := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if !want[f] {
				t.Errorf("unexpected dashboard %s", f)
			}
			d, err := ReadDashboard(f)
			if err != nil {
				t.Fatal(err)
			}
			if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 {
				t.Errorf("uid %q, title %q, schemaVersion %d: want all set (schema 30 or later)", d.UID, d.Title, d.SchemaVersion)
			}
			if other, ok := uids[d.UID]; ok {
				t.Errorf("uid %s is %s's too", d.UID, other)
			}
			uids[d.UID] = f
			hasDatasourceVar := false
			for _, v := range d.Templating.List {
				hasDatasourceVar = hasDatasourceVar || v.Name == "datasource" && v.Type == "datasource"
			}
			if !hasDatasourceVar {
				t.Error("no datasource variable: the dashboard would be bound to one Prometheus")
			}
			ids := map[int]bool{}
			queries := 0
			for _, p := range AllPanels(d.Panels) {
				if ids[p.ID] || p.ID == 0 {
					t.Errorf("panel %q: id %d is 0 or taken", p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
				}
				if p.Type == "row" || p.Type == "text" {
					continue
				}
				if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q: datasource %+v, want prometheus ${datasource}", p.Title, p.Datasource)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, tg := range p.Targets {
					if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" {
						t.Errorf("panel %q: target %+v needs an expr and a refId", p.Title, tg)
					}
					queries++
				}
			}
			if queries < 8 {
				t.Errorf("%d queries: want a dashboard, not a stub", queries)
			}
		})
	}
}

// TestGPUDashboardUsesDCGMNames: the per-GPU dashboard reads DCGM
// exporter's metric names and labels only, so it works on dcgm-exporter's
// series as well as the agent's.
func TestGPUDashboardUsesDCGMNames(t *testing.T) {
	qs, err := Queries(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range qs {
		if q.File != filepath.Join("grafana", "gpucal-gpus.json") {
			continue
		}
		for _, m := range MetricNames(q.Expr) {
			n++
			if !strings.HasPrefix(m, "DCGM_FI_DEV_") {
				t.Errorf("%s: %s is not a DCGM exporter metric", q.Where, m)
			}
		}
	}
	if n < 10 {
		t.Errorf("the GPU dashboard reads %d metrics, want the DCGM fields the agent exports", n)
	}
}
