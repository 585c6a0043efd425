package gpu

import (
	"context"
	"strconv"
	"strings"
)

// Reader takes a snapshot of every GPU on the node. nvmlreader provides the
// real one (NVML) and a simulated one (fake GPUs).
type Reader interface {
	// Read returns one Device per GPU, ordered by index. An error means the
	// snapshot could not be taken at all; fields a GPU does not support are
	// left out of its Device instead (see Field).
	Read(ctx context.Context) ([]Device, error)
	// Close releases the reader (NVML's Shutdown).
	Close() error
}

// Field names a reading a GPU may or may not provide. NVML answers
// NOT_SUPPORTED for some readings on some GPUs (power on some boards,
// memory-copy utilisation under vGPU); such a reading is absent from the
// Device rather than zero, so that the exporter leaves it out instead of
// exporting a false 0.
type Field uint16

// The readings a Device may hold besides its identity.
const (
	FieldMemory      Field = 1 << iota // MemoryTotalMiB, MemoryUsedMiB, MemoryFreeMiB
	FieldGPUUtil                       // GPUUtil
	FieldMemCopyUtil                   // MemCopyUtil
	FieldTemperature                   // TemperatureC
	FieldPower                         // PowerW
	FieldEnergy                        // EnergyMilliJoules
	FieldSMClock                       // SMClockMHz
	FieldMemClock                      // MemClockMHz
	FieldXID                           // LastXID
	FieldProcesses                     // Processes
)

var fieldNames = []string{
	"memory", "gpu_util", "mem_copy_util", "temperature", "power",
	"energy", "sm_clock", "mem_clock", "xid", "processes",
}

// String lists the fields in f, joined by "|", for messages and tests.
func (f Field) String() string {
	var names []string
	for i, name := range fieldNames {
		if f&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// Device is a snapshot of one GPU. The identity (Index to PCIBusID) is
// always set; every other reading is valid only when Present has its Field.
type Device struct {
	Index    int    // NVML index, the order CUDA_VISIBLE_DEVICES counts in by default
	Minor    int    // minor number: the GPU is /dev/nvidia<Minor>
	UUID     string // "GPU-…", what the agent puts in CUDA_VISIBLE_DEVICES
	Name     string // as NVML gives it, e.g. "NVIDIA H100 80GB HBM3"
	PCIBusID string // e.g. "00000000:18:00.0"

	Present Field // which of the readings below are valid

	MemoryTotalMiB    uint64
	MemoryUsedMiB     uint64
	MemoryFreeMiB     uint64
	GPUUtil           uint32  // percent of the last sample period a kernel ran
	MemCopyUtil       uint32  // percent of the last sample period memory was read or written
	TemperatureC      uint32  // GPU core temperature
	PowerW            float64 // current draw
	EnergyMilliJoules uint64  // since the driver was loaded; only grows
	SMClockMHz        uint32
	MemClockMHz       uint32
	LastXID           uint64 // the last critical XID seen, 0 for none

	Processes []Process // compute processes on the GPU, host PIDs
}

// Has reports whether the reading f is valid in d.
func (d Device) Has(f Field) bool { return d.Present&f == f }

// DeviceFile is the device node of the GPU, "nvidia0" for minor 0, which is
// DCGM exporter's device label.
func (d Device) DeviceFile() string { return "nvidia" + strconv.Itoa(d.Minor) }

// Process is a compute process running on a GPU.
type Process struct {
	PID int // in the host's PID namespace
	// UsedMiB is the GPU memory the process holds; NVML cannot always tell
	// (UsedKnown false), for example without permission to see it.
	UsedMiB   uint64
	UsedKnown bool
	// Owner is who runs it, when the Sampler could tell (OwnerKnown): the
	// agent tells a reservation's holder and the process's owner when a
	// process gpucal did not start sits on reserved GPUs.
	Owner      Owner
	OwnerKnown bool
}
