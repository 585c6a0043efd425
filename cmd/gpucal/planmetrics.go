package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpucal/gpucal/core"
)

// planMetrics are the replan loop's metrics. Only the leader replans, so
// only the leader's series move; the others stay at zero.
type planMetrics struct {
	queued, running prometheus.Gauge
	started         prometheus.Counter
	took            prometheus.Histogram
}

func newPlanMetrics(reg prometheus.Registerer) *planMetrics {
	m := &planMetrics{
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "gpucal", Name: "queue_jobs",
			Help: "Jobs waiting in the queue at the last replan (the leader's; 0 on the other replicas)."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "gpucal", Name: "running_jobs",
			Help: "Jobs holding GPUs at the last replan (the leader's; 0 on the other replicas)."}),
		started: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "gpucal", Name: "jobs_started_total",
			Help: "Jobs the replan loop started (moved to starting with their GPUs)."}),
		took: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "gpucal", Name: "replan_duration_seconds",
			Help:    "How long one replan took: snapshot, plan and commit.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}), // 1 ms to 65 s
	}
	reg.MustRegister(m.queued, m.running, m.started, m.took)
	return m
}

func (m *planMetrics) observe(res core.ReplanResult, took time.Duration) {
	m.queued.Set(float64(res.Queued))
	m.running.Set(float64(res.Running))
	m.started.Add(float64(len(res.Started)))
	m.took.Observe(took.Seconds())
}
