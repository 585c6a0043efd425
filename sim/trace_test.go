package sim

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadPhilly(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Trace
		wantErr string
	}{
		{
			name: "header, one-node and multi-node jobs",
			in: "#job id,arrival time (sec),topology,shape,size,duration (sec)\n" +
				"0,0.0,CLOS,1,1,3613033.0\n" +
				"1,120.5,CLOS,8+8,16,5400.0\n" +
				"2,121,CLOS,2+2,4,0\n",
			want: Trace{Jobs: []TraceJob{
				{ID: "0", GPUs: 1, Nodes: 1, Duration: 3613033 * time.Second},
				{ID: "1", Submit: 120500 * time.Millisecond, GPUs: 16, Nodes: 2, Duration: 5400 * time.Second},
				{ID: "2", Submit: 121 * time.Second, GPUs: 4, Nodes: 2},
			}},
		},
		{
			name: "out of order arrivals are sorted and made relative to the first",
			in:   "5,300,CLOS,1,1,10\n4,100,CLOS,1,1,20\n",
			want: Trace{Jobs: []TraceJob{
				{ID: "4", GPUs: 1, Nodes: 1, Duration: 20 * time.Second},
				{ID: "5", Submit: 200 * time.Second, GPUs: 1, Nodes: 1, Duration: 10 * time.Second},
			}},
		},
		{name: "empty", in: "", want: Trace{}},
		{name: "shape does not add up", in: "#h\n0,0,CLOS,8+8,8,10\n", wantErr: "line 2: shape \"8+8\" adds up to 16 GPUs but the size is 8"},
		{name: "bad shape", in: "0,0,CLOS,8+,8,10\n", wantErr: "line 1: shape \"8+\" is not a per-node split"},
		{name: "negative duration", in: "0,0,CLOS,1,1,-5\n", wantErr: "line 1: duration: -5 seconds is out of range"},
		{name: "runtime past time.Duration", in: "0,0,CLOS,1,1,9.5e9\n", wantErr: "line 1: duration: 9.5e+09 seconds is out of range"},
		{name: "not a number", in: "0,0,CLOS,1,1,10\n1,soon,CLOS,1,1,10\n", wantErr: "line 2: arrival time \"soon\" is not a number of seconds"},
		{name: "zero GPUs", in: "0,0,CLOS,0,0,10\n", wantErr: "line 1: size \"0\" is not a GPU count"},
		{name: "missing field", in: "0,0,CLOS,1,1,10\n1,0,CLOS,1,1\n", wantErr: "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadPhilly(strings.NewReader(tt.in))
			checkLoad(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestLoadSWF(t *testing.T) {
	const header = "; Version: 2.2\n; MaxNodes: 100\n; MaxProcs: 128\n;\n"
	tests := []struct {
		name    string
		in      string
		want    Trace
		wantErr string
	}{
		{
			name: "header and jobs",
			in: header +
				"    1        0 964980  97225   56     -1    -1   56 210000    -1  1   1   1  -1 -1 -1 -1 -1\n" +
				"\n" +
				"    2   327952 291900   9382   -1     -1    -1   80  14400    -1  0   2   7  -1 -1 -1 -1 -1\n" +
				"    3   327998 303900    177    4     -1    -1   -1     -1    -1  5  -1  -1  -1 -1 -1 -1 -1\n",
			want: Trace{MaxProcs: 128, Jobs: []TraceJob{
				{ID: "1", GPUs: 56, Duration: 97225 * time.Second, Requested: 210000 * time.Second, User: "u1", Group: "g1", Status: "completed"},
				{ID: "2", Submit: 327952 * time.Second, GPUs: 80, Duration: 9382 * time.Second, Requested: 14400 * time.Second, User: "u2", Group: "g7", Status: "failed"},
				{ID: "3", Submit: 327998 * time.Second, GPUs: 4, Duration: 177 * time.Second, Status: "cancelled"},
			}},
		},
		{
			name: "jobs without a runtime or processors are skipped",
			in: "1 10 0 -1 4 -1 -1 4 60 -1 1 1 1 -1 -1 -1 -1 -1\n" +
				"2 20 0 30 -1 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1\n" +
				"3 30 0 30 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n",
			want: Trace{Skipped: 2, Jobs: []TraceJob{
				{ID: "3", GPUs: 2, Duration: 30 * time.Second, Requested: time.Minute, User: "u1", Group: "g1", Status: "completed"},
			}},
		},
		{name: "MaxNodes alone sizes the machine", in: "; MaxNodes: 100\n", want: Trace{MaxProcs: 100}},
		{name: "too few fields", in: header + "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1\n", wantErr: "line 5: a job line has 18 fields, this one has 17"},
		{name: "not a number", in: "1 0 0 ten 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", wantErr: "line 1: field 4 (run) \"ten\" is not a number"},
		{name: "absurd runtime", in: "1 0 0 1e300 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", wantErr: "line 1: run: 1e+300 seconds is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadSWF(strings.NewReader(tt.in))
			checkLoad(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestLoadHelios(t *testing.T) {
	small, err := os.ReadFile("testdata/helios_small.csv")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    Trace
		wantErr string
	}{
		{
			// A full Helios log's columns: the CPU job (j2) and the job that
			// never started (j4) are skipped; j5 has no duration but a start and end.
			name: "Helios columns and dates",
			in:   string(small),
			want: Trace{Skipped: 2, Jobs: []TraceJob{
				{ID: "j3", GPUs: 16, Nodes: 2, Duration: 1800 * time.Second, User: "alice", Group: "vcA", Status: "failed"},
				{ID: "j1", Submit: 10 * time.Second, GPUs: 8, Nodes: 1, Duration: time.Hour, User: "alice", Group: "vcA", Status: "completed"},
				{ID: "j5", Submit: 120 * time.Second, GPUs: 2, Nodes: 1, Duration: 30 * time.Minute, User: "carol", Group: "vcB", Status: "timeout"},
			}},
		},
		{
			name: "any column order, Unix seconds, no node_num",
			in:   "duration,submit_time,gpu_num,user,state\n60,1600000100,1,dan,Pass\n30.5,1600000000,4,eve,Killed\n",
			want: Trace{Jobs: []TraceJob{
				{GPUs: 4, Duration: 30500 * time.Millisecond, User: "eve", Status: "cancelled"},
				{Submit: 100 * time.Second, GPUs: 1, Duration: time.Minute, User: "dan", Status: "completed"},
			}},
		},
		{name: "empty", in: "", wantErr: "the file is empty"},
		{name: "no gpu_num column", in: "job_id,submit_time,duration\n1,0,10\n", wantErr: "line 1: the header must name the columns submit_time and gpu_num"},
		{name: "no duration", in: "job_id,submit_time,gpu_num,start_time\n1,0,1,0\n", wantErr: "line 1: the header must name a duration column"},
		{name: "bad date", in: "submit_time,gpu_num,duration\n2020-13-01 00:00:00,1,10\n", wantErr: "line 2: submit_time \"2020-13-01 00:00:00\" is neither Unix seconds nor a time"},
		{name: "ends before it starts", in: "submit_time,gpu_num,start_time,end_time\n0,1,100,50\n", wantErr: "line 2: end_time \"50\" is before start_time \"100\""},
		{name: "bad GPU count", in: "submit_time,gpu_num,duration\n0,-1,10\n", wantErr: "line 2: gpu_num \"-1\" is not a GPU count"},
		{name: "wrong number of fields", in: "submit_time,gpu_num,duration\n0,1,10\n0,1\n", wantErr: "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadHelios(strings.NewReader(tt.in))
			checkLoad(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestLoadUnknownFormat(t *testing.T) {
	_, err := Load(strings.NewReader(""), "csv")
	if err == nil || !strings.Contains(err.Error(), `unknown trace format "csv"`) {
		t.Errorf("Load(csv) error = %v, want an unknown-format error", err)
	}
}

func checkLoad(t *testing.T, got Trace, err error, want Trace, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace mismatch (-want +got):\n%s", diff)
	}
}

// checkTrace holds for every trace a loader returns.
func checkTrace(t *testing.T, tr Trace) {
	t.Helper()
	for i, j := range tr.Jobs {
		switch {
		case j.GPUs < 1 || j.Duration < 0 || j.Submit < 0 || j.Requested < 0:
			t.Fatalf("job %d = %+v: out of range", i, j)
		case i == 0 && j.Submit != 0:
			t.Fatalf("the first job is submitted at %v, want 0", j.Submit)
		case i > 0 && j.Submit < tr.Jobs[i-1].Submit:
			t.Fatalf("job %d is out of order", i)
		}
	}
}

func FuzzLoadPhilly(f *testing.F) {
	f.Add("#job id,arrival time (sec),topology,shape,size,duration (sec)\n0,0.0,CLOS,1,1,3613033.0\n1,5,CLOS,8+8,16,60\n")
	f.Add("0,1e9,CLOS,2+2,4,NaN\n")
	f.Add("0,\"1\",CLOS,1,1,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		if tr, err := LoadPhilly(strings.NewReader(in)); err == nil {
			checkTrace(t, tr)
		}
	})
}

func FuzzLoadSWF(f *testing.F) {
	f.Add("; MaxProcs: 100\n1 0 10 97225 56 -1 -1 56 210000 -1 1 1 1 -1 -1 -1 -1 -1\n")
	f.Add("1 0 10 -1 -1 -1 -1 -1 -1 -1 5 -1 -1 -1 -1 -1 -1 -1\n")
	f.Add("1 Inf 10 1e10 1e7 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n")
	f.Fuzz(func(t *testing.T, in string) {
		if tr, err := LoadSWF(strings.NewReader(in)); err == nil {
			checkTrace(t, tr)
		}
	})
}

func FuzzLoadHelios(f *testing.F) {
	if small, err := os.ReadFile("testdata/helios_small.csv"); err == nil {
		f.Add(string(small))
	}
	f.Add("submit_time,gpu_num,duration\n1600000000,1,10\n")
	f.Add("submit_time,gpu_num,start_time,end_time\n0,1,2020-01-01 00:00:00,2020-01-01T01:00:00\n")
	f.Fuzz(func(t *testing.T, in string) {
		if tr, err := LoadHelios(strings.NewReader(in)); err == nil {
			checkTrace(t, tr)
		}
	})
}
