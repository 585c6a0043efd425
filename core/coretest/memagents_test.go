package coretest_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/core/coretest"
)

// n1 reads node n1 of the seeded store.
func n1(t *testing.T, s *coretest.MemStore) core.Node {
	t.Helper()
	var n core.Node
	err := s.View(ctx, func(tx core.Tx) error {
		ns, err := tx.Nodes(ctx)
		n = ns[0]
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMemStoreUpdateNode(t *testing.T) {
	s := seeded(t)
	n := n1(t, s)
	n.State, n.LastSeen, n.Agent, n.NVML = core.NodeReady, epoch, "v1", "nvml: no driver"
	n.GPUs[0].Fault, n.GPUs[0].Telemetry = "XID 79", core.Telemetry{At: epoch, Util: 50, UsedMiB: 1024, TempC: 60, PowerW: 200}
	n.GPUs[1].Name, n.GPUs[1].MemoryMiB, n.GPUs[1].State = "NVIDIA A100-SXM4-40GB", 40960, core.GPUDown
	// A new GPU, listed before the others: it is stored in index order.
	n.GPUs = append([]core.GPU{{Index: 2, Name: "NVIDIA A100-SXM4-80GB", UUID: "GPU-n1-2"}}, n.GPUs...)
	if err := s.Update(ctx, func(tx core.Tx) error { return tx.UpdateNode(ctx, &n) }); err != nil {
		t.Fatalf("UpdateNode: %v", err)
	}
	if g := n.GPUs[0]; g.ID != 3 || g.NodeID != n.ID || g.Node != "n1" || g.State != core.GPUUp {
		t.Errorf("UpdateNode filled in the new GPU as %+v", g)
	}
	want := n
	want.GPUs = []core.GPU{n.GPUs[1], n.GPUs[2], n.GPUs[0]}
	n.GPUs[1].Fault = "changed after the update"
	if diff := cmp.Diff(want, n1(t, s)); diff != "" {
		t.Errorf("node after UpdateNode (-want +got):\n%s", diff)
	}

	tests := []struct {
		name string
		node func() core.Node
		want core.Code
	}{
		{"unknown node", func() core.Node { return core.Node{ID: 9, Name: "n9"} }, core.CodeNotFound},
		{"unknown GPU", func() core.Node { o := want; o.GPUs = []core.GPU{{ID: 99, State: core.GPUUp}}; return o }, core.CodeNotFound},
		{"unknown node state", func() core.Node { o := want; o.State = "lost"; return o }, core.CodeInvalid},
		{"GPU without a state", func() core.Node { o := want; o.GPUs = []core.GPU{{ID: 1}}; return o }, core.CodeInvalid},
		{"taken UUID", func() core.Node { o := want; o.GPUs = []core.GPU{{Index: 7, UUID: "GPU-n1-0"}}; return o }, core.CodeConflict},
		{"taken index", func() core.Node { o := want; o.GPUs = []core.GPU{{Index: 1, UUID: "GPU-new"}}; return o }, core.CodeConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.node()
			if got := core.ErrorCode(s.Update(ctx, func(tx core.Tx) error { return tx.UpdateNode(ctx, &o) })); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
		})
	}
	if diff := cmp.Diff(want, n1(t, s)); diff != "" {
		t.Errorf("node after refused updates (-want +got):\n%s", diff)
	}
}

func TestMemStoreCredentials(t *testing.T) {
	s := seeded(t)
	err := s.Update(ctx, func(tx core.Tx) error {
		n := coretest.Node("n2").GPUs(1, "NVIDIA L40S").Build()
		if err := tx.InsertNode(ctx, &n); err != nil {
			return err
		}
		if err := tx.SetNodeCredential(ctx, 1, "old"); err != nil {
			return err
		}
		if err := tx.SetNodeCredential(ctx, 1, "new"); err != nil {
			return err
		}
		return tx.InsertJoinToken(ctx, core.JoinToken{Hash: "jt", CreatedBy: "alice", CreatedAt: epoch, ExpiresAt: epoch.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		fn   func(tx core.Tx) error
		want core.Code
	}{
		{"new credential", func(tx core.Tx) error {
			n, err := tx.NodeByCredential(ctx, "new")
			if err == nil && (n.Name != "n1" || len(n.GPUs) != 2) {
				t.Errorf("NodeByCredential = %+v, want n1 with its GPUs", n)
			}
			return err
		}, ""},
		{"replaced credential", func(tx core.Tx) error { _, err := tx.NodeByCredential(ctx, "old"); return err }, core.CodeNotFound},
		{"no credential", func(tx core.Tx) error { _, err := tx.NodeByCredential(ctx, ""); return err }, core.CodeNotFound},
		{"another node's credential", func(tx core.Tx) error { return tx.SetNodeCredential(ctx, 2, "new") }, core.CodeConflict},
		{"unknown node", func(tx core.Tx) error { return tx.SetNodeCredential(ctx, 9, "x") }, core.CodeNotFound},
		{"removed credential", func(tx core.Tx) error {
			if err := tx.SetNodeCredential(ctx, 1, ""); err != nil {
				return err
			}
			_, err := tx.NodeByCredential(ctx, "new")
			return err
		}, core.CodeNotFound},
		{"join token", func(tx core.Tx) error {
			jt, err := tx.JoinToken(ctx, "jt")
			if err == nil && (jt.CreatedBy != "alice" || !jt.ExpiresAt.Equal(epoch.Add(time.Hour))) {
				t.Errorf("JoinToken = %+v", jt)
			}
			return err
		}, ""},
		{"unknown join token", func(tx core.Tx) error { _, err := tx.JoinToken(ctx, "nope"); return err }, core.CodeNotFound},
		{"join token twice", func(tx core.Tx) error { return tx.InsertJoinToken(ctx, core.JoinToken{Hash: "jt", CreatedBy: "alice"}) }, core.CodeConflict},
		{"join token of nobody", func(tx core.Tx) error { return tx.InsertJoinToken(ctx, core.JoinToken{Hash: "x", CreatedBy: "zed"}) }, core.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := core.ErrorCode(s.Update(ctx, tt.fn)); got != tt.want {
				t.Errorf("code = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemStoreLogs(t *testing.T) {
	s := withJobs(t)
	appendLog := func(job, offset, n int64, data string) (int64, error) {
		var size int64
		err := s.Update(ctx, func(tx core.Tx) (err error) {
			size, err = tx.AppendLog(ctx, job, offset, n, []byte(data))
			return err
		})
		return size, err
	}
	steps := []struct {
		name      string
		job       int64
		offset, n int64
		data      string
		size      int64
		code      core.Code
		msg       string
	}{
		{"first chunk", 1, 0, 6, "hello\n", 6, "", ""},
		{"wrong offset", 1, 3, 3, "lo\n", 0, core.CodeConflict, "the log of j1 has 6 bytes, not 3"},
		{"chunk mostly dropped", 1, 6, 100, "[100", 106, "", ""},
		{"empty chunk", 1, 106, 0, "", 106, "", ""},
		{"empty chunk at a wrong offset", 1, 0, 0, "", 0, core.CodeConflict, "the log of j1 has 106 bytes, not 0"},
		{"more data than bytes", 1, 106, 1, "ab", 0, core.CodeInvalid, ""},
		{"unknown job", 9, 0, 1, "x", 0, core.CodeNotFound, "job j9 not found"},
		{"tail", 1, 106, 4, "end\n", 110, "", ""},
	}
	for _, st := range steps {
		size, err := appendLog(st.job, st.offset, st.n, st.data)
		if got := core.ErrorCode(err); got != st.code || (st.msg != "" && core.ErrorMessage(err) != st.msg) {
			t.Fatalf("%s: AppendLog = %v, want code %q %s", st.name, err, st.code, st.msg)
		}
		if err == nil && size != st.size {
			t.Errorf("%s: AppendLog returned size %d, want %d", st.name, size, st.size)
		}
	}

	hello := core.LogChunk{Offset: 0, N: 6, Data: []byte("hello\n")}
	dropped := core.LogChunk{Offset: 6, N: 100, Data: []byte("[100")}
	tail := core.LogChunk{Offset: 106, N: 4, Data: []byte("end\n")}
	ranges := []struct {
		name          string
		job           int64
		offset, limit int64
		want          []core.LogChunk
		size          int64
		code          core.Code
	}{
		{"everything", 1, 0, 1 << 62, []core.LogChunk{hello, dropped, tail}, 110, ""},
		{"across a boundary", 1, 5, 2, []core.LogChunk{hello, dropped}, 110, ""},
		{"inside the dropped bytes", 1, 50, 10, []core.LogChunk{dropped}, 110, ""},
		{"at the size", 1, 110, 10, nil, 110, ""},
		{"no bytes", 1, 0, 0, nil, 110, ""},
		{"a job without a log", 2, 0, 10, nil, 0, ""},
		{"unknown job", 9, 0, 10, nil, 0, core.CodeNotFound},
		{"negative limit", 1, 0, -1, nil, 0, core.CodeInvalid},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			var got []core.LogChunk
			var size int64
			err := s.View(ctx, func(tx core.Tx) (err error) { got, size, err = tx.Log(ctx, r.job, r.offset, r.limit); return err })
			if code := core.ErrorCode(err); code != r.code {
				t.Fatalf("Log = %v, want code %q", err, r.code)
			}
			if diff := cmp.Diff(r.want, got); diff != "" || size != r.size {
				t.Errorf("Log(%d, %d) = size %d, want %d; chunks (-want +got):\n%s", r.offset, r.limit, size, r.size, diff)
			}
			if len(got) > 0 {
				got[0].Data[0] = '!' // a copy: the store keeps its own
			}
		})
	}
}

func TestMemStoreJobAgentFields(t *testing.T) {
	s := withJobs(t)
	margin := 3 * time.Second
	stop := &core.StopRequest{Reason: core.StopCancelled, At: epoch, Deadline: epoch.Add(time.Minute)}
	runs := []core.NodeRun{{Node: "n1", JobReport: core.JobReport{Job: 1, State: core.RunExited, Margin: &margin,
		Progress: &core.ProgressReport{Fraction: 0.5}}}}
	var want core.Job
	err := s.Update(ctx, func(tx core.Tx) error {
		j := core.Job{Owner: "alice", GPUs: 1, Command: []string{"x"}, Checkpoint: "SIGUSR2", State: core.JobQueued, SubmittedAt: epoch}
		if err := tx.InsertJob(ctx, &j); err != nil {
			return err
		}
		j.State, j.Stop, j.Runs = core.JobDraining, stop, runs
		want = j
		return tx.UpdateJob(ctx, j)
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the caller changes afterwards stays its own.
	want = copyStopAndRuns(want)
	*runs[0].Margin, stop.Reason = time.Hour, "changed"
	var got core.Job
	_ = s.View(ctx, func(tx core.Tx) (err error) { got, err = tx.Job(ctx, want.ID); return err })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Job (-want +got):\n%s", diff)
	}
}

// copyStopAndRuns copies j deep enough for TestMemStoreJobAgentFields.
func copyStopAndRuns(j core.Job) core.Job {
	s := *j.Stop
	j.Stop = &s
	j.Runs = append([]core.NodeRun(nil), j.Runs...)
	m := *j.Runs[0].Margin
	j.Runs[0].Margin = &m
	return j
}
