package agent

import (
	"strings"
	"testing"

	"github.com/gpucal/gpucal/core"
)

// TestLogShippingResumes: a log larger than a chunk is shipped in chunks
// of at most 256 KiB; when the server turns out to have less than the
// agent shipped (it lost the tail), the agent resumes from the server's
// size, and the server ends with the whole log, its size reported.
func TestLogShippingResumes(t *testing.T) {
	h := newHarness(t)
	lost := false
	h.conn.onAppend = func(job int64, stored []byte) []byte {
		if !lost && len(stored) > 300<<10 {
			lost = true
			return stored[:1000]
		}
		return stored
	}
	// 700 KiB of output, then a pause, then the rest: shipped while the job
	// runs and after it ends.
	script := `head -c 716800 /dev/zero | tr '\0' x; echo; sleep 0.3; echo end`
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(16, script)}})
	h.start()
	r := h.awaitJob(0, 16, "exited with its log shipped", func(r core.JobReport) bool { return r.State == core.RunExited && r.LogSize > 0 })

	file := readFile(t, logFile(h, 16))
	if len(file) != 700<<10+5 || !strings.HasSuffix(file, "x\nend\n") {
		t.Fatalf("the job wrote %d bytes, want %d ending in end", len(file), 700<<10+5)
	}
	if got := h.conn.log(16); got != file {
		t.Errorf("the server has %d bytes of the log, the file %d; they differ", len(got), len(file))
	}
	if r.LogSize != int64(len(file)) {
		t.Errorf("reported log size %d, want %d", r.LogSize, len(file))
	}
	h.conn.mu.Lock()
	defer h.conn.mu.Unlock()
	if !lost || h.conn.mismatches == 0 {
		t.Errorf("the server never lost the tail (lost %v, mismatches %d); the test tests nothing", lost, h.conn.mismatches)
	}
	for _, n := range h.conn.chunks {
		if n > maxChunk {
			t.Errorf("a chunk of %d bytes, over %d", n, maxChunk)
		}
	}
}

// TestLogShippingWhileServerDown: a log written while the server is cut
// off is shipped once it answers again.
func TestLogShippingWhileServerDown(t *testing.T) {
	h := newHarness(t)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{shJob(17, `echo one; sleep 0.3; echo two`)}})
	h.start()
	h.awaitLog(17, "one")
	h.conn.setDown(true)
	h.awaitJob(0, 17, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	if got := h.conn.log(17); got != "one\n" {
		t.Errorf("the server got %q while down", got)
	}
	n := h.conn.setDown(false)
	r := h.awaitJob(n, 17, "with its log size", func(r core.JobReport) bool { return r.LogSize > 0 })
	if got := h.conn.log(17); got != "one\ntwo\n" || r.LogSize != 8 {
		t.Errorf("the server has %q, log size %d; want both lines, 8", got, r.LogSize)
	}
}

// TestLogShippedAfterAck: the server may acknowledge a job's end before
// all of its log arrived; the agent stops reporting the job but ships the
// rest of the log before it forgets it.
func TestLogShippedAfterAck(t *testing.T) {
	h := newHarness(t)
	o := shJob(18, `echo one; sleep 0.3; echo two`)
	h.conn.set(core.DesiredState{Run: []core.JobOrder{o}})
	h.start()
	h.awaitLog(18, "one")
	h.conn.setDown(true)
	h.awaitJob(0, 18, "exited", func(r core.JobReport) bool { return r.State == core.RunExited })
	h.conn.set(core.DesiredState{Ack: []int64{18}})
	n := h.conn.setDown(false)
	h.await(n+1, "j18 no longer reported", func(hb core.Heartbeat) bool { _, found := jobIn(hb, 18); return !found })
	h.awaitLog(18, "two")
	if got := h.conn.log(18); got != "one\ntwo\n" {
		t.Errorf("the server has %q", got)
	}
	awaitState(t, h.dir, "j18 forgotten", func(st savedState) bool { return len(st.Jobs) == 0 })
}
