package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpucal/gpucal/store/storetest"
)

// readiness is what /readyz says of leadership.
type readiness struct {
	Status     string `json:"status"`
	Leader     bool   `json:"leader"`
	LeaderName string `json:"leader_name"`
}

func (s *server) readiness(t *testing.T) (readiness, bool) {
	t.Helper()
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		return readiness{}, false
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Errorf("/readyz: %v", err)
	}
	return r, resp.StatusCode == http.StatusOK
}

// metric returns the value of one unlabelled metric on /metrics, "" when absent.
func (s *server) metric(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestSingleServerLeads: a server on SQLite leads from the start and
// says so in /readyz and the gpucal_leader metric.
func TestSingleServerLeads(t *testing.T) {
	s := startServer(t, storetest.SQLite(t))
	if r, ok := s.readiness(t); !ok || !r.Leader || r.LeaderName == "" {
		t.Errorf("/readyz: %+v", r)
	}
	if v := s.metric(t, "gpucal_leader"); v != "1" {
		t.Errorf("gpucal_leader = %q, want 1", v)
	}
	// The leader's replan loop ran at start and reports the queue.
	for deadline := time.Now().Add(10 * time.Second); s.metric(t, "gpucal_replan_duration_seconds_count") == "0" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n, q := s.metric(t, "gpucal_replan_duration_seconds_count"), s.metric(t, "gpucal_queue_jobs"); n == "0" || n == "" || q != "0" {
		t.Errorf("replans %q, queue %q; want at least one replan of an empty queue", n, q)
	}
}

// TestLeaderFailover: two replicas on one PostgreSQL database; exactly one
// leads. Killed with SIGKILL, it is replaced once its lease expires; a
// replica stopped with SIGTERM gives the lease up and the other leads at
// its next try.
func TestLeaderFailover(t *testing.T) {
	db := storetest.Postgres(t)
	const lease = 3 * time.Second
	flags := []string{"--leader-lease", lease.String()}
	a := startServer(t, db, flags...)
	b := startServer(t, db, flags...)
	// leads waits until want leads, checking that no two of the live
	// replicas ever lead at once, and returns how long it took.
	leads := func(want *server, live []*server, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			n := 0
			for _, s := range live {
				if r, ok := s.readiness(t); ok && r.Leader {
					n++
				}
			}
			if n > 1 {
				t.Fatalf("%d replicas lead at once", n)
			}
			if r, ok := want.readiness(t); ok && r.Leader {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("%s does not lead after %s", want.url, within)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	leads(a, []*server{a, b}, 2*lease) // a started first
	// b names the leader once it has looked (its first claim, at start).
	r, _ := b.readiness(t)
	for deadline := time.Now().Add(lease); r.LeaderName == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, _ = b.readiness(t)
	}
	if ra, _ := a.readiness(t); r.Leader || r.LeaderName != ra.LeaderName || b.metric(t, "gpucal_leader") != "0" {
		t.Errorf("b: %+v (a: %+v), gpucal_leader %s", r, ra, b.metric(t, "gpucal_leader"))
	}

	a.kill()
	took := leads(b, []*server{b}, 2*lease)
	t.Logf("takeover after SIGKILL: %s (lease %s)", took.Round(10*time.Millisecond), lease)
	if took < lease/2 {
		t.Errorf("b led %s after a was killed, before a's lease could have expired", took)
	}

	c := startServer(t, db, flags...)
	if r, _ := c.readiness(t); r.Leader {
		t.Fatalf("a new replica leads while b does")
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.cmd.Wait()
	took = leads(c, []*server{c}, lease)
	t.Logf("takeover after SIGTERM: %s", took.Round(10*time.Millisecond))
}
