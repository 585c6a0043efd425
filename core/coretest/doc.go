// Package coretest holds builders for valid-by-default core fixtures, a
// pinned clock and MemStore, an in-memory core.Store, so that core's Service
// and the adapters above it can be tested fast and without a database.
//
// It is used only by tests. It imports core and the standard library only
// (deps_test.go at the module root enforces this); the real databases are
// tested by the store package.
package coretest
