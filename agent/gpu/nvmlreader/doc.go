// Package nvmlreader reads the node's GPUs through NVML with NVIDIA's
// go-nvml, and simulates GPUs on go-nvml's mock servers for --fake-gpus.
// Both are gpu.Readers and share one reading code path, written against
// nvml.Interface so that tests pass mocks.
//
// go-nvml needs cgo. Built without cgo (CGO_ENABLED=0), this package still
// compiles, so that everything else does, but Open and Fake return
// ErrNoCgo. Only the agent's packages may import it; keeping it out of the
// server keeps the server a pure-Go build.
package nvmlreader

import "errors"

// ErrNoDriver is returned by Open when NVML cannot be loaded: no NVIDIA
// driver is installed or loaded on this machine.
var ErrNoDriver = errors.New("no NVIDIA driver found")

// ErrNoCgo is returned by Open and Fake in a build without cgo.
var ErrNoCgo = errors.New("this gpucal was built without cgo, and NVML needs a cgo build (CGO_ENABLED=1 with a C compiler)")
