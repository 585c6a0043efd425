package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store"
	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// fixture is a running API on a real SQLite database with an admin, a node
// of 8 A100s and two users.
type fixture struct {
	srv     *httptest.Server
	db      *store.DB
	svc     *core.Service
	admin   *web.Client
	alice   *web.Client
	bob     *web.Client
	changes atomic.Int64 // calls of Config.OnChange
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, storetest.SQLite(t))
}

// newFixtureOn is newFixture on the database dsn names.
func newFixtureOn(t *testing.T, dsn string) *fixture {
	t.Helper()
	ctx := context.Background()
	db, svc := openService(t, dsn)
	f := &fixture{db: db, svc: svc}
	srv := httptest.NewServer(web.NewServer(web.Config{Service: svc, Keys: db, Ready: db.Ping, OnChange: func() { f.changes.Add(1) }}))
	t.Cleanup(srv.Close)
	f.srv, f.admin = srv, &web.Client{BaseURL: srv.URL, Token: "t0"}
	if _, err := f.admin.AddNode(ctx, node("a100-1", 8)); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		tok, err := f.admin.CreateToken(ctx, web.TokenRequest{User: u})
		if err != nil {
			t.Fatal(err)
		}
		c := &web.Client{BaseURL: srv.URL, Token: tok.Token}
		if u == "alice" {
			f.alice = c
		} else {
			f.bob = c
		}
	}
	return f
}

func node(name string, n int) web.NewNode {
	nn := web.NewNode{Name: name}
	for i := range n {
		nn.GPUs = append(nn.GPUs, web.NewGPU{Index: i, Name: "NVIDIA A100-SXM4-80GB", Memory: 81920, UUID: fmt.Sprintf("GPU-%s-%d", name, i)})
	}
	return nn
}

func at(h int) string { return now.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }

func apiErr(t *testing.T, err error) *web.APIError {
	t.Helper()
	var e *web.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want an API error", err)
	}
	return e
}

func TestBookConflictCalendar(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := f.alice.Book(ctx, web.BookRequest{GPUs: 4, Model: "a100", Start: at(23), End: at(27), Note: "llama finetune"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "r1" || len(r.GPUs) != 4 || r.Owner != "alice" || r.State != "confirmed" {
		t.Errorf("booked %+v, want r1 with 4 GPUs for alice, confirmed", r)
	}

	_, err = f.bob.Book(ctx, web.BookRequest{GPUs: 8, Model: "a100", Start: at(25), End: at(28)}, "")
	e := apiErr(t, err)
	if e.Status != http.StatusConflict || e.Code != "conflict" {
		t.Fatalf("overlapping booking: %d %s, want 409 conflict", e.Status, e.Code)
	}
	if len(e.With) != 1 || e.With[0].ID != "r1" || e.With[0].Owner != "alice" {
		t.Errorf("conflict names %+v, want r1 (alice)", e.With)
	}
	wantLater := core.Alternative{Kind: "later", GPUs: 8, Model: "a100", Start: now.Add(27 * time.Hour), End: now.Add(30 * time.Hour)}
	if len(e.Alternatives) == 0 || !cmp.Equal(e.Alternatives[0], wantLater) {
		t.Errorf("alternatives = %+v, want first %+v", e.Alternatives, wantLater)
	}
	if !strings.Contains(e.Message, "r1") {
		t.Errorf("message %q does not name r1", e.Message)
	}

	cal, err := f.bob.Calendar(ctx, web.CalendarQuery{From: now, To: now.Add(48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.GPUs) != 8 || len(cal.Items) != 1 || cal.Items[0].ID != "r1" || len(cal.Items[0].GPUs) != 4 {
		t.Errorf("calendar = %d GPUs, items %+v; want 8 GPUs and r1 on 4", len(cal.GPUs), cal.Items)
	}
}

func TestReservationLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := f.alice.Book(ctx, web.BookRequest{GPUs: 2, Start: at(1), End: at(3)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.bob.Cancel(ctx, r.ID); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("bob cancelling alice's booking: %v, want 403", err)
	}
	ext, err := f.alice.Extend(ctx, r.ID, web.ExtendRequest{By: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if !ext.End.Equal(now.Add(4 * time.Hour)) {
		t.Errorf("extended end = %s, want %s", ext.End, now.Add(4*time.Hour))
	}
	if _, err := f.alice.Extend(ctx, r.ID, web.ExtendRequest{By: "1h", End: at(9)}); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("extend with by and end: %v, want 422", err)
	}
	got, err := f.alice.Release(ctx, r.ID) // not started yet: cancelled
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "cancelled" {
		t.Errorf("state after release before start = %s, want cancelled", got.State)
	}
	if _, err := f.alice.Cancel(ctx, r.ID); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("cancelling twice: %v, want 422", err)
	}
	for _, id := range []string{"r999", "banana", "0"} {
		if _, err := f.alice.Reservation(ctx, id); apiErr(t, err).Status != http.StatusNotFound {
			t.Errorf("GET %s: %v, want 404", id, err)
		}
	}
	audit, err := f.admin.Audit(ctx, "", "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Actor+" "+a.Action)
	}
	want := []string{"alice reservation.release", "alice reservation.extend", "alice reservation.book"}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("audit of r1 (-want +got):\n%s", diff)
	}
	if _, err := f.alice.Audit(ctx, "", "", 0); apiErr(t, err).Status != http.StatusForbidden {
		t.Errorf("alice reading the audit log: %v, want 403", err)
	}
}

// TestBadInput sends requests a client should never send and checks each
// gets the documented 4xx with a clear message and changes nothing.
func TestBadInput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.alice.Book(ctx, web.BookRequest{GPUs: 1, Start: at(1), End: at(2)}, ""); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, f)
	long := strings.Repeat("x", 501)
	tests := []struct {
		name, method, path, token, body string
		status                          int
		msg                             string
	}{
		{"no token", "POST", "/api/v1/reservations", "", `{"gpus":1}`, 401, "token is required"},
		{"wrong token", "POST", "/api/v1/reservations", "nope", `{"gpus":1}`, 401, "not valid"},
		{"malformed json", "POST", "/api/v1/reservations", "alice", `{"gpus":`, 400, "malformed JSON"},
		{"not json", "POST", "/api/v1/reservations", "alice", `gpus=4`, 400, "malformed JSON"},
		{"empty body", "POST", "/api/v1/reservations", "alice", ``, 400, "empty"},
		{"two objects", "POST", "/api/v1/reservations", "alice", `{"gpus":1}{"gpus":2}`, 400, "exactly one"},
		{"unknown field", "POST", "/api/v1/reservations", "alice", `{"gpus":1,"colour":"red","start":"` + at(1) + `","end":"` + at(2) + `"}`, 400, "colour"},
		{"gpus as string", "POST", "/api/v1/reservations", "alice", `{"gpus":"four"}`, 400, "gpus"},
		{"gpus overflow", "POST", "/api/v1/reservations", "alice", `{"gpus":1e30}`, 400, "gpus"},
		{"zero gpus", "POST", "/api/v1/reservations", "alice", book(0, "", at(1), at(2), ""), 422, "at least 1"},
		{"negative gpus", "POST", "/api/v1/reservations", "alice", book(-3, "", at(1), at(2), ""), 422, "at least 1"},
		{"huge gpus", "POST", "/api/v1/reservations", "alice", book(1000000, "", at(1), at(2), ""), 422, "only 8 can be booked"},
		{"unknown model", "POST", "/api/v1/reservations", "alice", book(1, "h100", at(1), at(2), ""), 422, "a100-80gb"},
		{"not a model", "POST", "/api/v1/reservations", "alice", book(1, "!!", at(1), at(2), ""), 422, "not a GPU model"},
		{"end before start", "POST", "/api/v1/reservations", "alice", book(1, "", at(3), at(2), ""), 422, "must be after"},
		{"zero length", "POST", "/api/v1/reservations", "alice", book(1, "", at(3), at(3), ""), 422, "must be after"},
		{"in the past", "POST", "/api/v1/reservations", "alice", book(1, "", at(-5), at(-4), ""), 422, "in the past"},
		{"absurd date", "POST", "/api/v1/reservations", "alice", book(1, "", "9999-01-01T00:00:00Z", "9999-01-02T00:00:00Z", ""), 422, "ahead"},
		{"year one", "POST", "/api/v1/reservations", "alice", book(1, "", "0001-06-01T00:00:00Z", "0001-06-02T00:00:00Z", ""), 422, "past"},
		{"too long", "POST", "/api/v1/reservations", "alice", book(1, "", at(1), at(1+24*15), ""), 422, "at most 14 days"},
		{"oversized note", "POST", "/api/v1/reservations", "alice", book(1, "", at(1), at(2), long), 422, "note"},
		{"bad time format", "POST", "/api/v1/reservations", "alice", book(1, "", "tomorrow", at(2), ""), 422, "RFC 3339"},
		{"bad zone offset", "POST", "/api/v1/reservations", "alice", book(1, "", "2026-12-03T09:00:00+25:00", at(30), ""), 422, "RFC 3339"},
		{"missing start", "POST", "/api/v1/reservations", "alice", `{"gpus":1,"end":"` + at(2) + `"}`, 422, "start"},
		{"unknown node", "POST", "/api/v1/reservations", "alice", `{"gpus":1,"node":"nope","start":"` + at(1) + `","end":"` + at(2) + `"}`, 422, "no node"},
		{"unknown project", "POST", "/api/v1/reservations", "alice", `{"gpus":1,"project":"nope","start":"` + at(1) + `","end":"` + at(2) + `"}`, 422, "project"},
		{"owner not admin", "POST", "/api/v1/reservations", "alice", `{"gpus":1,"owner":"bob","start":"` + at(1) + `","end":"` + at(2) + `"}`, 403, "admins"},
		{"huge body", "POST", "/api/v1/reservations", "alice", `{"note":"` + strings.Repeat("x", 300<<10) + `"}`, 400, "larger"},
		{"extend garbage", "POST", "/api/v1/reservations/r1/extend", "alice", `{"by":"soon"}`, 422, "duration"},
		{"extend nothing", "POST", "/api/v1/reservations/r1/extend", "alice", `{}`, 422, "by"},
		{"node by non-admin", "POST", "/api/v1/nodes", "alice", `{"name":"x","gpus":[]}`, 403, "admins"},
		{"node no gpus", "POST", "/api/v1/nodes", "admin", `{"name":"x","gpus":[]}`, 422, "between 1 and"},
		{"node bad name", "POST", "/api/v1/nodes", "admin", `{"name":"Bad Name!","gpus":[{"index":0,"model":"NVIDIA A100","uuid":"u"}]}`, 422, "node name"},
		{"node duplicate", "POST", "/api/v1/nodes", "admin", `{"name":"a100-1","gpus":[{"index":0,"model":"NVIDIA A100","uuid":"new-uuid"}]}`, 409, "a100-1"},
		{"node duplicate uuid", "POST", "/api/v1/nodes", "admin", `{"name":"other","gpus":[{"index":0,"model":"NVIDIA A100","uuid":"GPU-a100-1-0"}]}`, 409, "GPU-a100-1-0"},
		{"calendar without range", "GET", "/api/v1/calendar", "alice", ``, 422, "from"},
		{"calendar reversed", "GET", "/api/v1/calendar?from=" + at(5) + "&to=" + at(1), "alice", ``, 422, "after"},
		{"calendar too wide", "GET", "/api/v1/calendar?from=" + at(0) + "&to=" + at(24*400), "alice", ``, 422, "at most"},
		{"list bad state", "GET", "/api/v1/reservations?state=happy", "alice", ``, 422, "state"},
		{"unknown route", "GET", "/api/v1/teapots", "alice", ``, 404, "no API route"},
		{"bad idempotency key", "POST", "/api/v1/reservations", "alice", book(1, "", at(5), at(6), ""), 400, "Idempotency-Key"},
	}
	tokens := map[string]string{"alice": f.alice.Token, "admin": "t0", "nope": "nope", "": ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(tt.body))
			if tok := tokens[tt.token]; tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			if tt.name == "bad idempotency key" {
				req.Header.Set("Idempotency-Key", "caf\u00e9")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body web.ErrorBody
			data, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(data, &body); err != nil {
				t.Fatalf("body %q is not the error JSON: %v", data, err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.status, data)
			}
			if !strings.Contains(body.Error.Message, tt.msg) {
				t.Errorf("message = %q, want it to mention %q", body.Error.Message, tt.msg)
			}
			if body.Error.Code == "" {
				t.Errorf("error code is empty")
			}
		})
	}
	if diff := cmp.Diff(before, snapshot(t, f)); diff != "" {
		t.Errorf("bad requests changed the database (-before +after):\n%s", diff)
	}
}

func book(gpus int, model, start, end, note string) string {
	b, _ := json.Marshal(web.BookRequest{GPUs: gpus, Model: model, Start: start, End: end, Note: note})
	return string(b)
}

// snapshot is what bad requests must not change: reservations, nodes, users, audit.
func snapshot(t *testing.T, f *fixture) string {
	t.Helper()
	ctx := context.Background()
	rs, err1 := f.admin.Reservations(ctx, web.ReservationQuery{})
	ns, err2 := f.admin.Nodes(ctx)
	us, err3 := f.admin.Users(ctx)
	as, err4 := f.admin.Audit(ctx, "", "", 1000)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{rs, ns, us, as})
	return string(b)
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := web.BookRequest{GPUs: 2, Start: at(1), End: at(2)}
	first, err := f.alice.Book(ctx, req, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.alice.Book(ctx, req, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("retry answered differently (-first +retry):\n%s", diff)
	}
	req.GPUs = 3
	if _, err := f.alice.Book(ctx, req, "key-1"); apiErr(t, err).Status != http.StatusUnprocessableEntity {
		t.Errorf("same key, other body: %v, want 422", err)
	}
	if _, err := f.bob.Book(ctx, web.BookRequest{GPUs: 2, Start: at(1), End: at(2)}, "key-1"); err != nil {
		t.Errorf("keys are per user; bob's key-1 should book: %v", err)
	}
	rs, err := f.admin.Reservations(ctx, web.ReservationQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Errorf("%d reservations, want 2 (alice's once, bob's once)", len(rs))
	}
}

func TestProbesAndMetrics(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
	ctx := context.Background()
	f.alice.Book(ctx, web.BookRequest{GPUs: 1, Start: at(1), End: at(2)}, "")
	f.alice.Book(ctx, web.BookRequest{GPUs: 8, Start: at(1), End: at(2)}, "")
	resp, err := http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`gpucal_booking_requests_total{result="ok",source="api"} 1`,
		`gpucal_booking_requests_total{result="conflict",source="api"} 1`,
		`gpucal_http_requests_total{code="201",route="POST /api/v1/reservations"} 1`,
		`gpucal_nodes{state="unmanaged"} 1`,
		`gpucal_nodes{state="down"} 0`,
		`gpucal_gpus{model="a100-80gb",status="idle"} 8`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	f.db.Close()
	resp, err = http.Get(f.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the database closed = %d, want 503", resp.StatusCode)
	}
}

// openService opens dsn as a service at now with the admin token t0.
func openService(t *testing.T, dsn string) (*store.DB, *core.Service) {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.NewService(db, core.WithClock(func() time.Time { return now }))
	if err := svc.InstallToken(context.Background(), "admin", "t0"); err != nil {
		t.Fatal(err)
	}
	return db, svc
}

// TestIdempotencyKeyClientGone: a client that goes away after its booking
// was made still has the outcome recorded under its key, so its retry gets
// the booking back instead of "in progress" now and a second booking once
// the claim is stale.
func TestIdempotencyKeyClientGone(t *testing.T) {
	ctx := context.Background()
	db, svc := openService(t, storetest.SQLite(t))
	var leave context.CancelFunc
	srv := web.NewServer(web.Config{Service: svc, Keys: db, OnChange: func() {
		if leave != nil {
			leave() // the client hangs up once the booking is made
		}
	}})
	nodeJSON, _ := json.Marshal(node("a100-1", 2))
	addNode := httptest.NewRequest(http.MethodPost, "/api/v1/nodes", strings.NewReader(string(nodeJSON)))
	addNode.Header.Set("Authorization", "Bearer t0")
	if w := httptest.NewRecorder(); func() int { srv.ServeHTTP(w, addNode); return w.Code }() != http.StatusCreated {
		t.Fatalf("adding a node: %d %s", w.Code, w.Body)
	}
	book := func(reqCtx context.Context) *httptest.ResponseRecorder {
		body := fmt.Sprintf(`{"gpus":2,"start":%q,"end":%q}`, at(1), at(2))
		r := httptest.NewRequestWithContext(reqCtx, http.MethodPost, "/api/v1/reservations", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer t0")
		r.Header.Set("Idempotency-Key", "gone-1")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}
	gone, cancel := context.WithCancel(ctx)
	leave = cancel
	book(gone)
	leave = nil
	w := book(ctx)
	if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry: %d, replayed %q: %s; want the first answer again", w.Code, w.Header().Get("Idempotent-Replayed"), w.Body)
	}
	if rs, _ := svc.Reservations(ctx, core.System, core.ReservationFilter{}); len(rs) != 1 {
		t.Errorf("%d reservations, want 1", len(rs))
	}
}
