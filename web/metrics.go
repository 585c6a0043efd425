package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpucal/gpucal/core"
)

// Metrics are the server's Prometheus metrics, on a registry of their own.
type Metrics struct {
	Registry *prometheus.Registry
	bookings *prometheus.CounterVec
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers gpucal's server metrics and the Go runtime's.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		bookings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "gpucal", Name: "booking_requests_total",
			Help: "Booking requests by source and result (ok, conflict, invalid, forbidden, …).",
		}, []string{"source", "result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "gpucal", Name: "http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "gpucal", Name: "http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10), NativeHistogramBucketFactor: 1.1,
		}, []string{"route"}),
	}
	m.Registry.MustRegister(m.bookings, m.requests, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchInventory adds the inventory gauges for svc; a registry that has
// them already (a second server on the same Metrics) keeps its own.
func (m *Metrics) watchInventory(svc *core.Service) {
	var already prometheus.AlreadyRegisteredError
	if err := m.Registry.Register(newInventoryCollector(svc)); err != nil && !errors.As(err, &already) {
		panic(err)
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

func (m *Metrics) booking(result string) { m.bookings.WithLabelValues("api", result).Inc() }

// observeHTTP records one request under its route pattern (bounded
// cardinality: never the raw path).
func (m *Metrics) observeHTTP(pattern string, code int, d time.Duration) {
	if pattern == "" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(pattern).Observe(d.Seconds())
}

// inventoryCollector reads the inventory at each scrape: nodes by agent
// state and GPUs by what they are doing (DESIGN §8), so that an alert can
// fire on a node that is down or a fleet that sits idle.
type inventoryCollector struct {
	svc          *core.Service
	nodes, gpus  *prometheus.Desc
	scrapeErrors prometheus.Counter
}

func newInventoryCollector(svc *core.Service) *inventoryCollector {
	return &inventoryCollector{
		svc: svc,
		nodes: prometheus.NewDesc("gpucal_nodes", "Nodes by agent state: ready, suspect, down, or unmanaged (added by hand, no agent).",
			[]string{"state"}, nil),
		gpus: prometheus.NewDesc("gpucal_gpus", "GPUs by what they are doing now: idle, reserved, running or down.",
			[]string{"status", "model"}, nil),
		scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "gpucal", Name: "inventory_scrape_errors_total",
			Help: "Scrapes that could not read the inventory."}),
	}
}

func (c *inventoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodes
	ch <- c.gpus
	c.scrapeErrors.Describe(ch)
}

func (c *inventoryCollector) Collect(ch chan<- prometheus.Metric) {
	defer c.scrapeErrors.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes, err := c.svc.Nodes(ctx, core.System)
	if err != nil {
		c.scrapeErrors.Inc()
		return
	}
	states := map[string]float64{"ready": 0, "suspect": 0, "down": 0, "unmanaged": 0}
	type key struct{ status, model string }
	gpus := map[key]float64{}
	for _, n := range nodes {
		state := string(n.State)
		if state == "" {
			state = "unmanaged"
		}
		states[state]++
		for _, g := range n.GPUs {
			gpus[key{g.Status, g.Model().String()}]++
		}
	}
	for s, v := range states {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, v, s)
	}
	for k, v := range gpus {
		ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, v, k.status, k.model)
	}
}
