package gpu

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// JobLabels say who holds a GPU, for the job, user and project labels.
// They are empty while no gpucal job runs on it.
type JobLabels struct {
	Job, User, Project string
}

// ExporterConfig says what the Exporter adds to the readings.
type ExporterConfig struct {
	// Hostname is the Hostname label, the node's host name.
	Hostname string
	// Labels tells which gpucal job holds the GPU with this UUID. Nil, or
	// empty labels, while the agent does not know of one. It is called
	// during a scrape, so it must be quick and safe for concurrent use.
	Labels func(uuid string) JobLabels
}

// deviceLabels are DCGM exporter's labels, then gpucal's own.
var deviceLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hpc_job", "user", "project"}

// gpuMetric describes one per-GPU metric: its DCGM name and how to read it.
type gpuMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	field Field
	value func(Device) float64
}

func newGPUMetric(name, help string, kind prometheus.ValueType, field Field, value func(Device) float64) gpuMetric {
	return gpuMetric{
		desc:  prometheus.NewDesc(name, help, deviceLabels, nil),
		kind:  kind,
		field: field,
		value: value,
	}
}

// gpuMetrics are the DCGM exporter fields gpucal exports, with DCGM's names,
// types and units (its etc/default-counters.csv).
func gpuMetrics() []gpuMetric {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return []gpuMetric{
		newGPUMetric("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", gauge, FieldGPUUtil,
			func(d Device) float64 { return float64(d.GPUUtil) }),
		newGPUMetric("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", gauge, FieldMemCopyUtil,
			func(d Device) float64 { return float64(d.MemCopyUtil) }),
		newGPUMetric("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", gauge, FieldMemory,
			func(d Device) float64 { return float64(d.MemoryUsedMiB) }),
		newGPUMetric("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", gauge, FieldMemory,
			func(d Device) float64 { return float64(d.MemoryFreeMiB) }),
		newGPUMetric("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", gauge, FieldTemperature,
			func(d Device) float64 { return float64(d.TemperatureC) }),
		newGPUMetric("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", gauge, FieldPower,
			func(d Device) float64 { return d.PowerW }),
		newGPUMetric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", counter, FieldEnergy,
			func(d Device) float64 { return float64(d.EnergyMilliJoules) }),
		newGPUMetric("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", gauge, FieldSMClock,
			func(d Device) float64 { return float64(d.SMClockMHz) }),
		newGPUMetric("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", gauge, FieldMemClock,
			func(d Device) float64 { return float64(d.MemClockMHz) }),
		newGPUMetric("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", gauge, FieldXID,
			func(d Device) float64 { return float64(d.LastXID) }),
	}
}

// Exporter is the prometheus.Collector of the agent's /metrics: per-GPU
// metrics under DCGM exporter's names and labels, plus job, user and
// project, and the agent's own gpucal_agent_nvml_up and
// gpucal_agent_gpu_read_seconds. It serves the Sampler's latest Sample, so
// a scrape never waits on NVML. A reading a GPU does not support is left
// out, never exported as 0.
//
// Its labels follow DCGM exporter (modelName, UUID, Hostname), not
// Prometheus' snake_case convention, so testutil's linter flags them; that
// is the point of the compatibility.
type Exporter struct {
	sampler *Sampler
	cfg     ExporterConfig
	metrics []gpuMetric
	up      *prometheus.Desc
}

// NewExporter returns an Exporter over the samples of s.
func NewExporter(s *Sampler, cfg ExporterConfig) *Exporter {
	return &Exporter{
		sampler: s,
		cfg:     cfg,
		metrics: gpuMetrics(),
		up: prometheus.NewDesc("gpucal_agent_nvml_up",
			"1 when the last read of the GPUs through NVML succeeded, 0 when it failed or none has been made yet.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range e.metrics {
		ch <- m.desc
	}
	ch <- e.up
	e.sampler.readSeconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	sample := e.sampler.Latest()
	up := 0.0
	if !sample.At.IsZero() && sample.Err == nil {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(e.up, prometheus.GaugeValue, up)
	e.sampler.readSeconds.Collect(ch)
	for _, d := range sample.Devices {
		labels := e.labelValues(d)
		for _, m := range e.metrics {
			if d.Has(m.field) {
				ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(d), labels...)
			}
		}
	}
}

// labelValues are the values of deviceLabels for d.
func (e *Exporter) labelValues(d Device) []string {
	var job JobLabels
	if e.cfg.Labels != nil {
		job = e.cfg.Labels(d.UUID)
	}
	return []string{strconv.Itoa(d.Index), d.UUID, d.PCIBusID, d.DeviceFile(), d.Name, e.cfg.Hostname, job.Job, job.User, job.Project}
}
