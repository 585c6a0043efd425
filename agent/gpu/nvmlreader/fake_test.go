//go:build cgo

package nvmlreader

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/agent/gpu"
)

// stepClock is a clock that the test moves.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }

func newFake(t *testing.T, spec string, seed uint64) (*FakeReader, *stepClock) {
	t.Helper()
	specs, err := gpu.ParseFake(spec)
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, err := Fake(specs, FakeOptions{Seed: seed, Now: clock.Now})
	if err != nil {
		t.Fatalf("Fake(%s): %v", spec, err)
	}
	t.Cleanup(func() { f.Close() })
	return f, clock
}

func TestFakeModels(t *testing.T) {
	tests := []struct {
		model, wantName string
		wantMiB         uint64
	}{
		{"H100", "NVIDIA H100 80GB HBM3", 81920},
		{"H200", "NVIDIA H200 141GB HBM3e", 144384},
		{"B200", "NVIDIA B200 180GB HBM3e", 184320},
		{"A100-40GB", "NVIDIA A100-SXM4-40GB", 40960},
		{"A100-80GB", "NVIDIA A100-SXM4-80GB", 81920},
		{"A30", "NVIDIA A30-PCIE-24GB", 24576},
	}
	if got, want := len(tests), len(gpu.FakeModels()); got != want {
		t.Fatalf("the test covers %d models, gpu.FakeModels has %d", got, want)
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			f, _ := newFake(t, "2x"+tt.model, 1)
			devices, err := f.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(devices) != 2 {
				t.Fatalf("got %d GPUs, want 2", len(devices))
			}
			d := devices[1]
			if d.Name != tt.wantName || d.MemoryTotalMiB != tt.wantMiB || d.Index != 1 || d.Minor != 1 {
				t.Errorf("GPU 1 is %q with %d MiB (index %d, minor %d), want %q with %d MiB (1, 1)",
					d.Name, d.MemoryTotalMiB, d.Index, d.Minor, tt.wantName, tt.wantMiB)
			}
			if d.PCIBusID != "00000000:11:00.0" || !strings.HasPrefix(d.UUID, "GPU-") || d.UUID == devices[0].UUID {
				t.Errorf("GPU 1 has bus ID %q and UUID %q (GPU 0: %q)", d.PCIBusID, d.UUID, devices[0].UUID)
			}
		})
	}
}

func TestFakeIsDeterministic(t *testing.T) {
	read := func(seed uint64) [][]gpu.Device {
		f, clock := newFake(t, "2xH100,1xA100-80GB", seed)
		if err := f.SetBusy(1, 4242, 30000); err != nil {
			t.Fatal(err)
		}
		var samples [][]gpu.Device
		for range 3 {
			d, err := f.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, d)
			clock.now = clock.now.Add(5 * time.Second)
		}
		return samples
	}
	if diff := cmp.Diff(read(7), read(7)); diff != "" {
		t.Errorf("two fakes with one seed differ (-first +second):\n%s", diff)
	}
	if cmp.Equal(read(7)[0][0].UUID, read(8)[0][0].UUID) {
		t.Error("two seeds gave the same UUID")
	}
}

func TestFakeBusy(t *testing.T) {
	f, clock := newFake(t, "2xH100", 1)
	read := func() []gpu.Device {
		t.Helper()
		clock.now = clock.now.Add(10 * time.Second)
		d, err := f.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	idle := read()
	if err := f.SetBusy(0, 4242, 30000); err != nil {
		t.Fatal(err)
	}
	busy := read()
	read() // let the temperature climb a little more
	warmer := read()
	if err := f.SetIdle(0); err != nil {
		t.Fatal(err)
	}
	idleAgain := read()

	checks := []struct {
		name string
		ok   bool
	}{
		{"idle GPU has no utilisation", idle[0].GPUUtil == 0 && len(idle[0].Processes) == 0},
		{"busy GPU is near full utilisation", busy[0].GPUUtil >= 90 && busy[0].GPUUtil <= 100},
		{"busy GPU draws more power", busy[0].PowerW > 400 && idle[0].PowerW < 100},
		{"busy GPU runs the job's process", cmp.Equal(busy[0].Processes, []gpu.Process{{PID: 4242, UsedMiB: 30000, UsedKnown: true}})},
		{"busy GPU's memory is the job's", busy[0].MemoryUsedMiB == 30000 && busy[0].MemoryFreeMiB == 81920-30000},
		{"busy GPU runs at full SM clock", busy[0].SMClockMHz == 1980 && idle[0].SMClockMHz == 345},
		{"busy GPU warms up", warmer[0].TemperatureC > idle[0].TemperatureC},
		{"the other GPU stays idle", busy[1].GPUUtil == 0 && len(busy[1].Processes) == 0},
		{"energy only grows", idle[0].EnergyMilliJoules < busy[0].EnergyMilliJoules && busy[0].EnergyMilliJoules < idleAgain[0].EnergyMilliJoules},
		{"idle again frees the GPU", idleAgain[0].GPUUtil == 0 && idleAgain[0].MemoryUsedMiB == 0 && len(idleAgain[0].Processes) == 0},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("idle %+v\nbusy %+v\nwarmer %+v\nidle again %+v", idle[0], busy[0], warmer[0], idleAgain[0])
			}
		})
	}
}

func TestFakeXID(t *testing.T) {
	f, _ := newFake(t, "2xH100", 1)
	if err := f.InjectXID(1, 79); err != nil {
		t.Fatal(err)
	}
	ds, err := f.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{0, 79} {
		if !ds[i].Has(gpu.FieldXID) || ds[i].LastXID != want {
			t.Errorf("GPU %d: XID reading %t, last %d; want %d", i, ds[i].Has(gpu.FieldXID), ds[i].LastXID, want)
		}
	}
	if err := f.InjectXID(2, 79); err == nil {
		t.Error("InjectXID accepted a GPU the node does not have")
	}
}

func TestFakeErrors(t *testing.T) {
	f, _ := newFake(t, "2xH100", 1)
	if err := f.SetBusy(2, 1, 1); err == nil || !strings.Contains(err.Error(), "GPUs 0 to 1") {
		t.Errorf("SetBusy(2) error = %v, want one naming GPUs 0 to 1", err)
	}
	if _, err := Fake([]gpu.FakeGPU{{Count: 65, Model: "H100"}}, FakeOptions{}); err == nil {
		t.Error("Fake accepted 65 GPUs")
	}
	if _, err := Fake([]gpu.FakeGPU{{Count: 1, Model: "V100"}}, FakeOptions{}); err == nil {
		t.Error("Fake accepted a V100")
	}
}

// TestFakeRecordsNoCalls guards bounded memory: go-nvml's mocks append
// every call with arguments to a slice that is never emptied, so a
// long-running fake must not go through them for what it reads each tick.
func TestFakeRecordsNoCalls(t *testing.T) {
	f, _ := newFake(t, "2xH100", 1)
	for range 10 {
		if _, err := f.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	lib := f.reader.lib.(*fakeLib)
	dev := lib.devices[0].(*fakeDevice)
	recorded := map[string]int{
		"DeviceGetHandleByIndex": len(lib.DeviceGetHandleByIndexCalls()),
		"GetTemperature":         len(dev.GetTemperatureCalls()),
		"GetClockInfo":           len(dev.GetClockInfoCalls()),
	}
	for call, n := range recorded {
		if n != 0 {
			t.Errorf("the mock recorded %d %s calls, want 0", n, call)
		}
	}
}
