package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

func joinTokenOf(t *testing.T, f *fixture) string {
	t.Helper()
	tok, err := f.admin.CreateJoinToken(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Token
}

// joinNode joins a node of two H100s through the API and returns a client
// holding its credential.
func joinNode(t *testing.T, f *fixture, name string) *web.Client {
	t.Helper()
	ctx := context.Background()
	tok, err := f.admin.CreateJoinToken(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Token, "gpucal_join_") || !tok.ExpiresAt.After(now) {
		t.Fatalf("join token %+v", tok)
	}
	hb := core.Heartbeat{Node: name, Agent: "test"}
	for i := range 2 {
		hb.GPUs = append(hb.GPUs, core.GPUReport{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", name, i), Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559})
	}
	res, err := (&web.Client{BaseURL: f.srv.URL, Token: tok.Token}).Join(ctx, hb)
	if err != nil {
		t.Fatal(err)
	}
	if res.Node.Name != name || len(res.Node.GPUs) != 2 || res.Node.State != "ready" {
		t.Fatalf("joined %+v", res.Node)
	}
	return &web.Client{BaseURL: f.srv.URL, Token: res.Credential}
}

func apiCode(err error) (int, string) {
	var api *web.APIError
	if errors.As(err, &api) {
		return api.Status, api.Code
	}
	return 0, ""
}

// TestAgentRoutes runs the agent protocol through the API on SQLite and,
// when one is available, PostgreSQL.
func TestAgentRoutes(t *testing.T) {
	storetest.Each(t, testAgentRoutes)
}

func testAgentRoutes(t *testing.T, dsn string) {
	f := newFixtureOn(t, dsn)
	ctx := context.Background()
	if _, err := f.alice.CreateJoinToken(ctx, 0); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("join token by alice: %v, want 403", err)
	}
	n1 := joinNode(t, f, "n1")
	n2 := joinNode(t, f, "n2")

	// The credential works for its node only, and an API token is not one.
	ds, err := n1.Heartbeat(ctx, core.Heartbeat{Node: "n1"})
	if err != nil || ds.Node != "n1" || ds.Interval <= 0 {
		t.Fatalf("heartbeat = %+v, %v", ds, err)
	}
	if _, err := n1.Heartbeat(ctx, core.Heartbeat{Node: "n2"}); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("n1's credential reporting for n2: %v, want 403", err)
	}
	if _, err := f.admin.Heartbeat(ctx, core.Heartbeat{Node: "n1"}); func() int { s, _ := apiCode(err); return s }() != http.StatusUnauthorized {
		t.Errorf("an API token as a node credential: %v, want 401", err)
	}
	bad := &web.Client{BaseURL: f.srv.URL, Token: "gpucal_join_0000"}
	if _, err := bad.Join(ctx, core.Heartbeat{Node: "n3", GPUs: []core.GPUReport{{UUID: "GPU-x", Name: "NVIDIA H100 80GB HBM3"}}}); func() int { s, _ := apiCode(err); return s }() != http.StatusUnauthorized {
		t.Errorf("join with an unknown token: %v, want 401", err)
	}

	// A job on n1: the agent is told to run it, ships its log, reports it done.
	j, err := f.alice.Submit(ctx, web.SubmitRequest{GPUs: 2, Model: "h100", Command: []string{"echo", "hi"}, Checkpoint: "usr2"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Replan(ctx, now); err != nil {
		t.Fatal(err)
	}
	got, _ := f.alice.Job(ctx, j.ID)
	node := got.Assigned[0].Node
	agent := map[string]*web.Client{"n1": n1, "n2": n2}[node]
	if _, err := (&web.Client{BaseURL: f.srv.URL, Token: joinTokenOf(t, f)}).Join(ctx, core.Heartbeat{Node: node,
		GPUs: []core.GPUReport{{UUID: "GPU-x", Name: "NVIDIA H100 80GB HBM3"}}}); func() int { s, _ := apiCode(err); return s }() != http.StatusConflict {
		t.Errorf("joining under the name of a node whose agent answers: %v, want 409", err)
	}
	ds, err = agent.Heartbeat(ctx, core.Heartbeat{Node: node})
	if err != nil || len(ds.Run) != 1 || ds.Run[0].Checkpoint != "SIGUSR2" {
		t.Fatalf("desired state %+v, %v; want the job with SIGUSR2", ds, err)
	}
	id, _ := core.ParseJobID(j.ID)

	// The job's own token reports its progress and does nothing else.
	jobClient := &web.Client{BaseURL: f.srv.URL, Token: ds.Run[0].Token}
	if !strings.HasPrefix(ds.Run[0].Token, "gpucal_job_") {
		t.Fatalf("job token %q", ds.Run[0].Token)
	}
	half := 0.5
	if got, err := jobClient.ReportProgress(ctx, j.ID, web.ProgressRequest{Fraction: &half}); err != nil || got.Progress == nil || got.Progress.Fraction != 0.5 {
		t.Errorf("progress with the job token: %+v, %v", got.Progress, err)
	}
	if _, err := jobClient.Job(ctx, j.ID); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("reading the job with its job token: %v, want 403", err)
	}
	other, err := f.alice.Submit(ctx, web.SubmitRequest{GPUs: 1, Model: "a100", Command: []string{"true"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobClient.ReportProgress(ctx, other.ID, web.ProgressRequest{Fraction: &half}); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("another job's progress with this job's token: %v, want 403", err)
	}
	tok := ds.Run[0].Token
	last := "0"
	if tok[len(tok)-1] == '0' {
		last = "1"
	}
	forged := &web.Client{BaseURL: f.srv.URL, Token: tok[:len(tok)-1] + last}
	if _, err := forged.ReportProgress(ctx, j.ID, web.ProgressRequest{Fraction: &half}); func() int { s, _ := apiCode(err); return s }() != http.StatusUnauthorized {
		t.Errorf("a forged job token: %v, want 401", err)
	}

	if size, err := agent.AppendLog(ctx, id, 0, []byte("hi\n")); err != nil || size != 3 {
		t.Fatalf("AppendLog = %d, %v", size, err)
	}
	_, err = agent.AppendLog(ctx, id, 1, []byte("x"))
	var api *web.APIError
	if !errors.As(err, &api) || api.Status != http.StatusConflict || api.LogSize != 3 {
		t.Errorf("append at a stale offset: %v (%+v), want 409 with size 3", err, api)
	}
	p, err := f.alice.Log(ctx, j.ID, 0, 0)
	if err != nil || string(p.Data) != "hi\n" || p.Size != 3 || p.Done || p.State != "starting" {
		t.Errorf("Log = %+v, %v", p, err)
	}
	if _, err := f.bob.Log(ctx, j.ID, 0, 0); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("bob reads alice's log: %v, want 403", err)
	}
	if _, err := agent.Heartbeat(ctx, core.Heartbeat{Node: node, Jobs: []core.JobReport{{Job: id, State: core.RunExited, LogSize: 3, LogDone: true}}}); err != nil {
		t.Fatal(err)
	}
	if p, err := f.alice.Log(ctx, j.ID, 3, 0); err != nil || !p.Done || p.State != "succeeded" {
		t.Errorf("the end of a finished job's log: %+v, %v", p, err)
	}
	if _, err := jobClient.ReportProgress(ctx, j.ID, web.ProgressRequest{Fraction: &half}); func() int { s, _ := apiCode(err); return s }() != http.StatusUnauthorized {
		t.Errorf("the job token once the job ended: %v, want 401", err)
	}
	// A GPU whose agent reports a critical XID is out of service until an
	// admin puts it back.
	faulty := core.Heartbeat{Node: "n1"}
	for i := range 2 {
		faulty.GPUs = append(faulty.GPUs, core.GPUReport{Index: i, UUID: fmt.Sprintf("GPU-n1-%d", i), Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559})
	}
	faulty.GPUs[1].XID = 79
	if _, err := n1.Heartbeat(ctx, faulty); err != nil {
		t.Fatal(err)
	}
	if _, err := f.alice.ClearFault(ctx, "n1", 1); func() int { s, _ := apiCode(err); return s }() != http.StatusForbidden {
		t.Errorf("alice clears a fault: %v, want 403", err)
	}
	if g, err := f.admin.ClearFault(ctx, "n1", 1); err != nil || g.Index != 1 {
		t.Errorf("ClearFault = %+v, %v", g, err)
	}
	if _, err := f.admin.ClearFault(ctx, "n1", 1); func() int { s, _ := apiCode(err); return s }() != http.StatusUnprocessableEntity {
		t.Errorf("clearing a GPU in service: %v, want 422", err)
	}

	nodes, err := f.alice.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if (n.Name == "n1" || n.Name == "n2") && (n.State != "ready" || n.LastSeen.IsZero()) {
			t.Errorf("node %s: state %q, last seen %s", n.Name, n.State, n.LastSeen)
		}
	}
}
