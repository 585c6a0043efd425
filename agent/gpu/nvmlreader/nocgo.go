//go:build !cgo

package nvmlreader

import (
	"context"
	"time"

	"github.com/gpucal/gpucal/agent/gpu"
)

// Reader stands in for the NVML reader in a build without cgo; Open never
// returns one.
type Reader struct{}

// Open returns ErrNoCgo: this build cannot load NVML.
func Open() (*Reader, error) { return nil, ErrNoCgo }

// Read returns ErrNoCgo.
func (*Reader) Read(context.Context) ([]gpu.Device, error) { return nil, ErrNoCgo }

// Close does nothing.
func (*Reader) Close() error { return nil }

// FakeOptions are as in a cgo build.
type FakeOptions struct {
	Seed uint64
	Now  func() time.Time
}

// FakeReader stands in for the simulated GPUs in a build without cgo,
// which cannot build go-nvml's mocks either; Fake never returns one.
type FakeReader struct{ Reader }

// Fake returns ErrNoCgo: the simulated GPUs are go-nvml mocks, which need
// cgo too.
func Fake([]gpu.FakeGPU, FakeOptions) (*FakeReader, error) { return nil, ErrNoCgo }

// SetBusy returns ErrNoCgo.
func (*FakeReader) SetBusy(int, int, uint64) error { return ErrNoCgo }

// InjectXID returns ErrNoCgo.
func (*FakeReader) InjectXID(int, uint64) error { return ErrNoCgo }

// SetIdle returns ErrNoCgo.
func (*FakeReader) SetIdle(int) error { return ErrNoCgo }
