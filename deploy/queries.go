package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"
)

// A Query is one PromQL expression of the kit: an alert or recording
// rule's, a dashboard panel's target or a dashboard variable's.
type Query struct {
	File  string // relative to the deploy folder: grafana/gpucal-gpus.json
	Where string // what holds it: rule GpucalNodeDown, panel "GPU utilisation" A, variable Hostname
	Expr  string // as written; Expand makes a dashboard's evaluable
}

// RuleFile is a Prometheus rule file, as far as the checks read it.
type RuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// Dashboard is a Grafana dashboard, as far as the checks read it.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is one of a dashboard's panels; a row may hold more.
type Panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	GridPos    *struct{ X, Y, W, H int } `json:"gridPos"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []Panel `json:"panels"`
}

// ReadRules reads the rule file at path.
func ReadRules(path string) (*RuleFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f RuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// ReadDashboard reads the dashboard at path.
func ReadDashboard(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// labelValues is Grafana's label_values(SELECTOR, LABEL) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.*?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)

// Queries returns every PromQL expression in dir's rule files
// (prometheus/*.yml) and dashboards (grafana/*.json), dir being the deploy
// folder. A label_values variable gives its selector; a variable of
// another kind gives none.
func Queries(dir string) ([]Query, error) {
	var qs []Query
	rules, _ := filepath.Glob(filepath.Join(dir, "prometheus", "*.yml"))
	for _, path := range rules {
		f, err := ReadRules(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, path)
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				qs = append(qs, Query{File: rel, Where: "rule " + r.Alert + r.Record, Expr: r.Expr})
			}
		}
	}
	dashboards, _ := filepath.Glob(filepath.Join(dir, "grafana", "*.json"))
	for _, path := range dashboards {
		d, err := ReadDashboard(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, path)
		for _, p := range AllPanels(d.Panels) {
			for _, t := range p.Targets {
				qs = append(qs, Query{File: rel, Where: fmt.Sprintf("panel %q %s", p.Title, t.RefID), Expr: t.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil {
				// An older dashboard keeps the query as a plain string.
				if err := json.Unmarshal(v.Query, &q.Query); err != nil {
					return nil, fmt.Errorf("%s: variable %s: %w", rel, v.Name, err)
				}
			}
			if m := labelValues.FindStringSubmatch(q.Query); m != nil && m[1] != "" {
				qs = append(qs, Query{File: rel, Where: "variable " + v.Name, Expr: m[1]})
			}
		}
	}
	return qs, nil
}

// AllPanels returns panels and the panels rows hold, in order.
func AllPanels(panels []Panel) []Panel {
	var out []Panel
	for _, p := range panels {
		out = append(out, p)
		out = append(out, AllPanels(p.Panels)...)
	}
	return out
}
