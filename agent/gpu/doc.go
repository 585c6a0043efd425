// Package gpu is what the node agent knows about its GPUs: a Device
// snapshot per GPU, the Reader that takes one, a Sampler that keeps the
// latest snapshot fresh, and a Prometheus collector that exports it under
// NVIDIA DCGM exporter's metric names and labels, so that existing GPU
// dashboards work unchanged. It also parses --fake-gpus specs.
//
// The package needs no cgo and imports the standard library and the
// Prometheus client only. Reading real (or simulated) GPUs through NVML
// lives in the nvmlreader package below it, the only place that needs cgo.
// Packages of the agent may import this one; docs/agent.md describes the
// metrics.
package gpu
