package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
