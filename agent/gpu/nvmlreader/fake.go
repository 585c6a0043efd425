//go:build cgo

package nvmlreader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpucal/gpucal/agent/gpu"
)

// FakeOptions make a FakeReader deterministic.
type FakeOptions struct {
	Seed uint64           // the UUIDs and the noise in the readings derive from it
	Now  func() time.Time // the clock readings move with; time.Now when nil
}

// FakeReader simulates GPUs for --fake-gpus and gpucal demo. The GPUs are
// go-nvml mock devices, so names, memory sizes and UUIDs look like NVML's,
// and they are read by the same code as real GPUs. Idle GPUs sit at idle
// power and clocks; a GPU marked busy with SetBusy shows high utilisation,
// power, temperature, its job's memory and process. It is safe for
// concurrent use.
type FakeReader struct {
	now    func() time.Time
	reader *Reader
	lib    *fakeLib

	mu   sync.Mutex // guards sims, which the mock devices read
	sims []*simGPU
}

var _ gpu.Reader = (*FakeReader)(nil)

// Fake returns simulated GPUs as specs ask (see gpu.ParseFake), indexed in
// order.
func Fake(specs []gpu.FakeGPU, opts FakeOptions) (*FakeReader, error) {
	if _, err := gpu.ParseFake(gpu.FormatFake(specs)); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &FakeReader{now: opts.Now}
	lib, err := f.build(specs, opts.Seed)
	if err != nil {
		return nil, err
	}
	if f.reader, err = FromInterface(lib); err != nil {
		return nil, err
	}
	return f, nil
}

// build makes the mock server and a simulation behind each of its GPUs.
func (f *FakeReader) build(specs []gpu.FakeGPU, seed uint64) (nvml.Interface, error) {
	var configs []gpus.Config
	var profiles []profile
	for _, s := range specs {
		m, ok := fakeModel(s.Model)
		if !ok {
			return nil, fmt.Errorf("fake GPU model %q has no mock definition", s.Model)
		}
		configs = append(configs, gpus.Multiple(s.Count, m.config)...)
		for range s.Count {
			profiles = append(profiles, m.profile)
		}
	}
	srv, err := server.New(server.WithGPUs(configs...), server.WithDriverVersion("550.54.15"),
		server.WithNVMLVersion("12.550.54.15"), server.WithCUDADriverVersion(12040))
	if err != nil {
		return nil, fmt.Errorf("building the mock NVML server: %w", err)
	}
	ids := rand.New(rand.NewPCG(seed, 0))
	lib := &fakeLib{Server: srv, events: &fakeEvents{}}
	f.lib = lib
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		dev.UUID = fakeUUID(ids)
		dev.PciBusID = fmt.Sprintf("00000000:%02X:00.0", 0x10+i)
		// go-nvml's A100-SXM4-40GB calls itself "Mock NVIDIA …"; real NVML does not.
		dev.Config.Name = strings.TrimPrefix(dev.Config.Name, "Mock ")
		sim := newSimGPU(profiles[i], dev.Config.MemoryMB, rand.New(rand.NewPCG(seed, uint64(i)+1)))
		f.sims = append(f.sims, sim)
		lib.devices = append(lib.devices, &fakeDevice{Device: dev, sim: sim})
	}
	return lib, nil
}

// Read advances the simulation to now and reads it like real GPUs.
func (f *FakeReader) Read(ctx context.Context) ([]gpu.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, s := range f.sims {
		s.advance(now)
	}
	return f.reader.Read(ctx)
}

// Close shuts the mock NVML down.
func (f *FakeReader) Close() error { return f.reader.Close() }

// SetBusy makes GPU index look held by a job: process pid using usedMiB of
// its memory, and near full utilisation from the next Read on.
func (f *FakeReader) SetBusy(index, pid int, usedMiB uint64) error {
	return f.set(index, func(s *simGPU) { s.busy, s.pid, s.usedMiB = true, pid, usedMiB })
}

// SetIdle makes GPU index idle again: no process, idle power and clocks.
func (f *FakeReader) SetIdle(index int) error {
	return f.set(index, func(s *simGPU) { s.busy, s.pid, s.usedMiB = false, 0, 0 })
}

// InjectXID makes GPU index report critical XID xid (48: a double-bit ECC
// error, 79: fallen off the bus, …) to the next Read, as NVML's event set
// would.
func (f *FakeReader) InjectXID(index int, xid uint64) error {
	return f.set(index, func(*simGPU) {
		f.lib.events.push(nvml.EventData{Device: f.lib.devices[index], EventType: nvml.EventTypeXidCriticalError, EventData: xid})
	})
}

func (f *FakeReader) set(index int, change func(*simGPU)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index < 0 || index >= len(f.sims) {
		return fmt.Errorf("no fake GPU %d; this node has GPUs 0 to %d", index, len(f.sims)-1)
	}
	change(f.sims[index])
	return nil
}

// fakeUUID draws a UUID in NVML's "GPU-…" form.
func fakeUUID(r *rand.Rand) string {
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// fakeModelDef ties a --fake-gpus model to go-nvml's mock definition and to
// how it behaves.
type fakeModelDef struct {
	config  gpus.Config
	profile profile
}

// fakeModel returns the definition of a gpu.FakeModels() name.
func fakeModel(name string) (fakeModelDef, bool) {
	switch name {
	case "H100":
		return fakeModelDef{gpus.H100_SXM5_80GB, profile{70, 700, 345, 1980, 2619}}, true
	case "H200":
		return fakeModelDef{gpus.H200_SXM5_141GB, profile{75, 700, 345, 1980, 3201}}, true
	case "B200":
		return fakeModelDef{gpus.B200_SXM5_180GB, profile{140, 1000, 345, 1965, 3996}}, true
	case "A100-40GB":
		return fakeModelDef{gpus.A100_SXM4_40GB, profile{55, 400, 210, 1410, 1215}}, true
	case "A100-80GB":
		return fakeModelDef{gpus.A100_SXM4_80GB, profile{60, 400, 210, 1410, 1593}}, true
	case "A30":
		return fakeModelDef{gpus.A30_PCIE_24GB, profile{30, 165, 210, 1440, 1215}}, true
	}
	return fakeModelDef{}, false
}

// fakeLib is the mock server with handles that skip the mock's call
// recording: the mock appends every call with arguments to a slice that
// is never emptied, which would grow without bound in a long-running demo.
type fakeLib struct {
	*server.Server
	devices []nvml.Device
	events  *fakeEvents
}

// EventSetCreate returns the simulated GPUs' one event set.
func (l *fakeLib) EventSetCreate() (nvml.EventSet, nvml.Return) { return l.events, nvml.SUCCESS }

// fakeEvents is the event set of simulated GPUs: InjectXID queues events,
// Wait hands them out in order and times out at once when none is queued.
// The methods it does not override are the mock's, which panic if called.
type fakeEvents struct {
	mock.EventSet
	mu    sync.Mutex
	queue []nvml.EventData
}

func (e *fakeEvents) push(ev nvml.EventData) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, ev)
}

func (e *fakeEvents) Wait(uint32) (nvml.EventData, nvml.Return) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	ev := e.queue[0]
	e.queue = e.queue[1:]
	return ev, nvml.SUCCESS
}

func (e *fakeEvents) Free() nvml.Return { return nvml.SUCCESS }

func (l *fakeLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if i < 0 || i >= len(l.devices) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return l.devices[i], nvml.SUCCESS
}

// fakeDevice is a mock device (identity, MIG) whose readings come from its
// simulation. The methods are overridden here rather than set as the
// mock's …Func fields so that they, too, skip the call recording.
type fakeDevice struct {
	*server.Device
	sim *simGPU
}

// RegisterEvents accepts every registration: simulated GPUs report XIDs
// that InjectXID queues.
func (d *fakeDevice) RegisterEvents(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }

func (d *fakeDevice) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
	for i := 0; i < len(d.PciBusID) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(d.PciBusID[i])
	}
	return p, nvml.SUCCESS
}

func (d *fakeDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	total := d.sim.totalMiB * mib
	used := d.sim.memoryUsedMiB() * mib
	return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
}

func (d *fakeDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{Gpu: d.sim.util, Memory: d.sim.memUtil}, nvml.SUCCESS
}

func (d *fakeDevice) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return uint32(d.sim.temperature + 0.5), nvml.SUCCESS
}

func (d *fakeDevice) GetPowerUsage() (uint32, nvml.Return) {
	return uint32(d.sim.powerW * 1000), nvml.SUCCESS
}

func (d *fakeDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	return uint64(d.sim.energyMJ), nvml.SUCCESS
}

func (d *fakeDevice) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	switch c {
	case nvml.CLOCK_SM, nvml.CLOCK_GRAPHICS:
		return d.sim.smMHz, nvml.SUCCESS
	case nvml.CLOCK_MEM:
		return d.sim.profile.memMHz, nvml.SUCCESS
	}
	return 0, nvml.ERROR_NOT_SUPPORTED
}

func (d *fakeDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if !d.sim.busy {
		return nil, nvml.SUCCESS
	}
	return []nvml.ProcessInfo{{Pid: uint32(d.sim.pid), UsedGpuMemory: d.sim.memoryUsedMiB() * mib}}, nvml.SUCCESS
}
