//go:build cgo

package nvmlreader

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/agent/gpu"
)

// mockH100s is a DGX H100 mock trimmed to n GPUs with every reading the
// mock leaves unset filled in; GPU i uses 1000*i MiB and draws 100+i W.
func mockH100s(n int) *server.Server {
	srv := dgxh100.New()
	srv.Devices = srv.Devices[:n]
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		dev.UUID = "GPU-" + strings.Repeat(string(rune('0'+i)), 8)
		dev.MemoryInfo = nvml.Memory{Total: 81920 * mib, Used: uint64(1000*i) * mib, Free: uint64(81920-1000*i) * mib}
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for j, c := range "00000000:18:00.0" {
				p.BusId[j] = int8(c)
			}
			return p, nvml.SUCCESS
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: uint32(i)}, nvml.SUCCESS
		}
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100000 + 1000*i), nvml.SUCCESS }
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 5000, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1980, nvml.SUCCESS
			}
			return 2619, nvml.SUCCESS
		}
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			if i == 0 {
				return nil, nvml.SUCCESS
			}
			return []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1000 * mib}, {Pid: 4243, UsedGpuMemory: ^uint64(0)}}, nvml.SUCCESS
		}
	}
	return srv
}

func device(srv *server.Server, i int) *server.Device { return srv.Devices[i].(*server.Device) }

const allFields = gpu.FieldMemory | gpu.FieldGPUUtil | gpu.FieldMemCopyUtil | gpu.FieldTemperature |
	gpu.FieldPower | gpu.FieldEnergy | gpu.FieldSMClock | gpu.FieldMemClock | gpu.FieldProcesses

func TestRead(t *testing.T) {
	srv := mockH100s(2)
	device(srv, 1).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	r, err := FromInterface(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	got, err := r.Read(t.Context())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	want := []gpu.Device{
		{
			Index: 0, Minor: 0, UUID: "GPU-00000000", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:18:00.0",
			Present: allFields, MemoryTotalMiB: 81920, MemoryFreeMiB: 81920, TemperatureC: 40, PowerW: 100,
			EnergyMilliJoules: 5000, SMClockMHz: 1980, MemClockMHz: 2619, Processes: []gpu.Process{},
		},
		{
			Index: 1, Minor: 1, UUID: "GPU-11111111", Name: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:18:00.0",
			Present:        allFields &^ gpu.FieldPower, // NOT_SUPPORTED: absent, not 0
			MemoryTotalMiB: 81920, MemoryUsedMiB: 1000, MemoryFreeMiB: 80920, GPUUtil: 10, MemCopyUtil: 1,
			TemperatureC: 40, EnergyMilliJoules: 5000, SMClockMHz: 1980, MemClockMHz: 2619,
			Processes: []gpu.Process{{PID: 4242, UsedMiB: 1000, UsedKnown: true}, {PID: 4243}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name    string
		spoil   func(*server.Server)
		wantErr string
	}{
		{
			name: "memory",
			spoil: func(s *server.Server) {
				device(s, 1).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
			},
			wantErr: "GPU 1 (GPU-11111111): GetMemoryInfo: ERROR_UNKNOWN",
		},
		{
			name: "lost GPU",
			spoil: func(s *server.Server) {
				device(s, 0).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
			},
			wantErr: "GPU 0 (GPU-00000000): GetTemperature: ERROR_GPU_IS_LOST",
		},
		{
			name: "uuid",
			spoil: func(s *server.Server) {
				device(s, 1).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
			},
			wantErr: "GPU 1: GetUUID: ERROR_UNKNOWN",
		},
		{
			name: "count",
			spoil: func(s *server.Server) {
				s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNINITIALIZED }
			},
			wantErr: "counting GPUs: DeviceGetCount: ERROR_UNINITIALIZED",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mockH100s(2)
			tt.spoil(srv)
			r, err := FromInterface(srv)
			if err != nil {
				t.Fatal(err)
			}
			devices, err := r.Read(t.Context())
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Read error = %v, want %q", err, tt.wantErr)
			}
			if devices != nil {
				t.Errorf("Read returned %d devices with its error, want none", len(devices))
			}
		})
	}
}

func TestFromInterfaceInitFails(t *testing.T) {
	tests := []struct {
		ret          nvml.Return
		wantNoDriver bool
		wantText     string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, true, "--fake-gpus 8xH100"},
		{nvml.ERROR_DRIVER_NOT_LOADED, true, "install the NVIDIA driver"},
		{nvml.ERROR_NO_PERMISSION, false, "/dev/nvidia*"},
		{nvml.ERROR_UNKNOWN, false, "starting NVML: ERROR_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.ret.String(), func(t *testing.T) {
			srv := mockH100s(1)
			srv.InitFunc = func() nvml.Return { return tt.ret }
			_, err := FromInterface(srv)
			if err == nil {
				t.Fatal("FromInterface succeeded, want an error")
			}
			if got := errors.Is(err, ErrNoDriver); got != tt.wantNoDriver {
				t.Errorf("errors.Is(%v, ErrNoDriver) = %v, want %v", err, got, tt.wantNoDriver)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

// TestReadXID: critical XID events arrive through an event set; a GPU that
// accepts the registration reports its last XID (0 before any), one that
// refuses reports none, and a read takes only what has arrived.
func TestReadXID(t *testing.T) {
	srv := mockH100s(2)
	var queue []nvml.EventData
	set := &mock.EventSet{
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			if len(queue) == 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := queue[0]
			queue = queue[1:]
			return ev, nvml.SUCCESS
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	device(srv, 0).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	device(srv, 1).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	r, err := FromInterface(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := func() []gpu.Device {
		t.Helper()
		ds, err := r.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	if ds := read(); !ds[0].Has(gpu.FieldXID) || ds[0].LastXID != 0 || ds[1].Has(gpu.FieldXID) {
		t.Errorf("before any XID: %+v / %+v, want 0 on GPU 0 and no reading on GPU 1", ds[0], ds[1])
	}
	queue = append(queue,
		nvml.EventData{Device: device(srv, 0), EventType: nvml.EventTypeXidCriticalError, EventData: 48},
		nvml.EventData{Device: device(srv, 0), EventType: nvml.EventTypeXidCriticalError, EventData: 79},
		nvml.EventData{Device: device(srv, 0), EventType: nvml.EventTypeSingleBitEccError, EventData: 1})
	if ds := read(); ds[0].LastXID != 79 || ds[1].Has(gpu.FieldXID) {
		t.Errorf("after XIDs 48 and 79: GPU 0 last XID %d, want 79", ds[0].LastXID)
	}
	if ds := read(); ds[0].LastXID != 79 {
		t.Errorf("the last XID is kept: %d, want 79", ds[0].LastXID)
	}
	if calls := len(device(srv, 0).RegisterEventsCalls()); calls != 1 {
		t.Errorf("GPU 0 registered %d times over three reads, want once", calls)
	}
}
