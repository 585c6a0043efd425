package agent

import (
	"fmt"

	"github.com/gpucal/gpucal/core"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the agent's own, next to the GPU exporter's.
type metrics struct {
	heartbeat prometheus.Histogram
	failures  prometheus.Counter
	drains    *prometheus.CounterVec
	jobs      *prometheus.GaugeVec
	foreign   *prometheus.CounterVec
}

// The results of a drain, for gpucal_agent_drains_total.
const (
	drainClean  = "clean"  // every process was gone by the deadline, and off the GPUs
	drainLate   = "late"   // gone, but after the deadline
	drainFailed = "failed" // a process outlived the ladder on the GPUs, or a signal could not be sent
)

// reportedStates are the values of gpucal_agent_jobs' state label.
var reportedStates = []core.RunState{core.RunRunning, core.RunDraining, core.RunExited, core.RunRefused}

// newMetrics makes the agent's metrics and registers them with reg, when
// it is not nil.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpucal_agent_heartbeat_seconds",
			Help:    "Round trip of the heartbeats the server answered.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12), // 5 ms to 10 s
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpucal_agent_heartbeat_failures_total",
			Help: "Heartbeats that got no answer from the server.",
		}),
		drains: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpucal_agent_drains_total",
			Help: "Jobs stopped by a stop order's ladder, by result: clean (gone by the deadline), late, failed (a process outlived the ladder on the GPUs, or signals could not be sent).",
		}, []string{"result"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpucal_agent_jobs",
			Help: "Jobs the agent reports, by state, as of the last heartbeat.",
		}, []string{"state"}),
		foreign: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpucal_agent_foreign_signals_total",
			Help: "Signals sent to processes gpucal did not start on reserved GPUs, by signal (only with the server's --kill-foreign-processes).",
		}, []string{"signal"}),
	}
	for _, r := range []string{drainClean, drainLate, drainFailed} {
		m.drains.WithLabelValues(r)
	}
	for _, s := range reportedStates {
		m.jobs.WithLabelValues(string(s))
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.heartbeat, m.failures, m.drains, m.jobs, m.foreign} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the agent's metrics: %w", err)
		}
	}
	return m, nil
}
