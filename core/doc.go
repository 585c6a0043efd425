// Package core is gpucal's domain: nodes and GPUs, users and projects,
// reservations, the booking rules and the Service that applies them.
//
// core imports the standard library only. Everything that does IO (the
// database, HTTP, chat, NVML) lives in an adapter package that imports core,
// never the reverse; deps_test.go at the module root enforces this.
//
// All instants are UTC and all windows are half-open [Start, End).
package core
