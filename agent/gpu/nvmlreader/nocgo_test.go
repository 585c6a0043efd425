//go:build !cgo

package nvmlreader

import (
	"context"
	"errors"
	"testing"

	"github.com/gpucal/gpucal/agent/gpu"
)

// TestWithoutCgo: a build without cgo says so plainly instead of failing
// somewhere inside NVML.
func TestWithoutCgo(t *testing.T) {
	if _, err := Open(); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Open() = %v, want ErrNoCgo", err)
	}
	if _, err := Fake([]gpu.FakeGPU{{Count: 1, Model: "H100"}}, FakeOptions{}); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Fake() = %v, want ErrNoCgo", err)
	}
	var r Reader
	if _, err := r.Read(context.Background()); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Read() = %v, want ErrNoCgo", err)
	}
}
