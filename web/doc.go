// Package web is gpucal's HTTP edge: the JSON API under /api/v1, health and
// readiness probes, Prometheus metrics, and Client, the Go client the CLI uses.
//
// web imports core and never the store or the chat adapters; cmd/gpucal wires
// them together. Domain error codes become HTTP statuses in one place,
// writeError.
package web
