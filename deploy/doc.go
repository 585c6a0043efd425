// Package deploy holds gpucal's deployment kit — systemd units, a compose
// file, Kubernetes manifests, a Helm chart, Grafana dashboards and
// Prometheus rules (README.md beside this file) — and the little code that
// reads the PromQL in the dashboards and rules, so that tests can check
// each query against the metrics gpucal exports: this package's own tests
// against the Go sources, and cmd/gpucal's TestPrometheusScrapes against a
// real Prometheus scraping a real server and agent.
//
// Only tests import it; no gpucal binary does.
package deploy
