//go:build cgo

package nvmlreader

import (
	"context"
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpucal/gpucal/agent/gpu"
)

const mib = 1 << 20

// Reader reads GPUs through an nvml.Interface. It is safe for one Read at a
// time; the Sampler never runs two.
type Reader struct {
	lib nvml.Interface
	xid xidWatch
}

// xidWatch follows the critical XID events NVML reports (a GPU fallen off
// the bus, a double-bit ECC error, …): the event set the GPUs are
// registered on, which GPUs NVML accepted, and each one's last XID.
type xidWatch struct {
	set     nvml.EventSet     // nil until the first read, and when NVML has no events
	tried   bool              // the set was asked for
	watched map[string]bool   // by GPU UUID: registered (false: NVML refused)
	last    map[string]uint64 // by GPU UUID: the last critical XID seen
}

// maxEventsPerRead bounds how many events one read takes off the set, so a
// GPU in an error storm cannot hold a read up; the rest wait for the next.
const maxEventsPerRead = 256

var _ gpu.Reader = (*Reader)(nil)

// Open loads the NVIDIA driver's NVML library and starts it. Without a
// driver the error wraps ErrNoDriver and says how to go on without GPUs.
func Open() (*Reader, error) {
	return FromInterface(nvml.New())
}

// FromInterface starts NVML through lib (nvml.New() or a mock) and returns
// a Reader over it. Close shuts NVML down again.
func FromInterface(lib nvml.Interface) (*Reader, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
		return &Reader{lib: lib}, nil
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w (NVML init: %v); install the NVIDIA driver, or simulate GPUs with --fake-gpus 8xH100", ErrNoDriver, ret)
	case nvml.ERROR_NO_PERMISSION:
		return nil, fmt.Errorf("starting NVML: %w; run the agent as a user that may open /dev/nvidia*", ret)
	default:
		return nil, fmt.Errorf("starting NVML: %w", ret)
	}
}

// Close shuts NVML down.
func (r *Reader) Close() error {
	if r.xid.set != nil {
		r.xid.set.Free()
	}
	if ret := r.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shutting NVML down: %w", ret)
	}
	return nil
}

// Read takes a snapshot of every GPU. A reading the GPU does not support is
// left out of its Device; any other failure fails the whole read, with an
// error naming the GPU and the NVML call.
func (r *Reader) Read(ctx context.Context) ([]gpu.Device, error) {
	n, ret := r.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("counting GPUs: DeviceGetCount: %w", ret)
	}
	devices := make([]gpu.Device, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading GPU %d: %w", i, err)
		}
		h, ret := r.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: DeviceGetHandleByIndex: %w", i, ret)
		}
		d, err := readDevice(i, h)
		if err != nil {
			return nil, err
		}
		r.watch(h, d.UUID)
		devices = append(devices, d)
	}
	r.takeEvents()
	for i := range devices {
		if uuid := devices[i].UUID; r.xid.watched[uuid] {
			devices[i].LastXID = r.xid.last[uuid]
			devices[i].Present |= gpu.FieldXID
		}
	}
	return devices, nil
}

// watch registers GPU h for critical XID events the first time it is seen.
// A driver or GPU without events (vGPU, some older boards) leaves the XID
// reading out rather than failing the read.
func (r *Reader) watch(h nvml.Device, uuid string) {
	w := &r.xid
	if !w.tried {
		w.tried = true
		w.watched, w.last = map[string]bool{}, map[string]uint64{}
		if set, ret := r.lib.EventSetCreate(); ret == nvml.SUCCESS {
			w.set = set
		}
	}
	if w.set == nil {
		return
	}
	if _, seen := w.watched[uuid]; !seen {
		w.watched[uuid] = h.RegisterEvents(nvml.EventTypeXidCriticalError, w.set) == nvml.SUCCESS
	}
}

// takeEvents takes the XID events that arrived since the last read off the
// set without waiting, keeping each GPU's last XID.
func (r *Reader) takeEvents() {
	w := &r.xid
	if w.set == nil {
		return
	}
	for range maxEventsPerRead {
		ev, ret := w.set.Wait(0)
		if ret != nvml.SUCCESS { // ERROR_TIMEOUT: nothing more
			return
		}
		if ev.EventType&nvml.EventTypeXidCriticalError == 0 || ev.Device == nil {
			continue
		}
		if uuid, ret := ev.Device.GetUUID(); ret == nvml.SUCCESS {
			w.last[uuid] = ev.EventData
		}
	}
}

// readDevice reads one GPU: its identity, which must succeed, then each
// reading, which may be unsupported.
func readDevice(index int, h nvml.Device) (gpu.Device, error) {
	d, err := readIdentity(index, h)
	if err != nil {
		return gpu.Device{}, err
	}
	rd := &deviceReading{d: &d}
	if m, ret := h.GetMemoryInfo(); rd.ok("GetMemoryInfo", gpu.FieldMemory, ret) {
		d.MemoryTotalMiB, d.MemoryUsedMiB, d.MemoryFreeMiB = m.Total/mib, m.Used/mib, m.Free/mib
	}
	if u, ret := h.GetUtilizationRates(); rd.ok("GetUtilizationRates", gpu.FieldGPUUtil|gpu.FieldMemCopyUtil, ret) {
		d.GPUUtil, d.MemCopyUtil = u.Gpu, u.Memory
	}
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); rd.ok("GetTemperature", gpu.FieldTemperature, ret) {
		d.TemperatureC = t
	}
	if mw, ret := h.GetPowerUsage(); rd.ok("GetPowerUsage", gpu.FieldPower, ret) {
		d.PowerW = float64(mw) / 1000
	}
	if mj, ret := h.GetTotalEnergyConsumption(); rd.ok("GetTotalEnergyConsumption", gpu.FieldEnergy, ret) {
		d.EnergyMilliJoules = mj
	}
	if mhz, ret := h.GetClockInfo(nvml.CLOCK_SM); rd.ok("GetClockInfo(SM)", gpu.FieldSMClock, ret) {
		d.SMClockMHz = mhz
	}
	if mhz, ret := h.GetClockInfo(nvml.CLOCK_MEM); rd.ok("GetClockInfo(MEM)", gpu.FieldMemClock, ret) {
		d.MemClockMHz = mhz
	}
	if ps, ret := h.GetComputeRunningProcesses(); rd.ok("GetComputeRunningProcesses", gpu.FieldProcesses, ret) {
		d.Processes = processes(ps)
	}
	return d, rd.err
}

// readIdentity reads what names a GPU; without it the GPU cannot be
// reported at all.
func readIdentity(index int, h nvml.Device) (gpu.Device, error) {
	d := gpu.Device{Index: index}
	var ret nvml.Return
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return d, fmt.Errorf("GPU %d: GetUUID: %w", index, ret)
	}
	fail := func(call string, ret nvml.Return) error {
		return fmt.Errorf("GPU %d (%s): %s: %w", index, d.UUID, call, ret)
	}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return d, fail("GetName", ret)
	}
	if d.Minor, ret = h.GetMinorNumber(); ret != nvml.SUCCESS {
		return d, fail("GetMinorNumber", ret)
	}
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return d, fail("GetPciInfo", ret)
	}
	d.PCIBusID = cString(pci.BusId[:])
	return d, nil
}

// deviceReading collects the optional readings of one GPU and the first
// error among them.
type deviceReading struct {
	d   *gpu.Device
	err error
}

// ok reports whether a reading succeeded and marks its field present.
// NOT_SUPPORTED leaves the field absent; any other failure is recorded as
// the error, and later readings are skipped.
func (r *deviceReading) ok(call string, f gpu.Field, ret nvml.Return) bool {
	switch {
	case r.err != nil || ret == nvml.ERROR_NOT_SUPPORTED:
		return false
	case ret != nvml.SUCCESS:
		r.err = fmt.Errorf("GPU %d (%s): %s: %w", r.d.Index, r.d.UUID, call, ret)
		return false
	}
	r.d.Present |= f
	return true
}

// processes converts NVML's process list. NVML reports memory it may not
// show as the all-ones value (NVML_VALUE_NOT_AVAILABLE).
func processes(ps []nvml.ProcessInfo) []gpu.Process {
	out := make([]gpu.Process, len(ps))
	for i, p := range ps {
		out[i] = gpu.Process{PID: int(p.Pid)}
		if p.UsedGpuMemory != math.MaxUint64 {
			out[i].UsedMiB, out[i].UsedKnown = p.UsedGpuMemory/mib, true
		}
	}
	return out
}

// cString converts a NUL-terminated C char array.
func cString(cs []int8) string {
	b := make([]byte, 0, len(cs))
	for _, c := range cs {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
