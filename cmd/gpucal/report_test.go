package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// TestReportCLI: gpucal report as text, JSON and CSV from a running server.
func TestReportCLI(t *testing.T) {
	s := startServer(t, storetest.SQLite(t))
	addNodes(t, s.client("t0"), 2)
	out, errOut, code := s.cli("report", "--from", "-24h")
	if code != 0 || !strings.Contains(out, "GPUs 16, ") || !strings.Contains(out, "utilisation") {
		t.Fatalf("report: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = s.cli("report", "--from", "-7d", "--json")
	var rep web.ReportJSON
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.GPUs != 16 || rep.To.Sub(rep.From) < 7*24*time.Hour-time.Minute {
		t.Errorf("report --json: exit %d, %v, %+v", code, err, rep)
	}
	if out, _, code = s.cli("report", "--csv"); code != 0 || !strings.HasPrefix(out, "kind,name,gpu_hours,jobs\n") {
		t.Errorf("report --csv: exit %d\n%s", code, out)
	}
	if _, errOut, code = s.cli("report", "--from", "-x"); code != 2 || !strings.Contains(errOut, "--from") {
		t.Errorf("a bad --from: exit %d, %s", code, errOut)
	}
	if _, errOut, code = s.cli("report", "--from", "now", "--to", "-2d"); code != 1 || !strings.Contains(errOut, "from before to") {
		t.Errorf("a period ending before it starts: exit %d, %s", code, errOut)
	}
}

// TestNoticesCLI: a person mutes a kind and sets quiet hours; bad input
// is refused and changes nothing.
func TestNoticesCLI(t *testing.T) {
	s := startServer(t, storetest.SQLite(t))
	out, errOut, code := s.cli("notices")
	if code != 0 || out != "Notices to admin: muted nothing; quiet hours none.\n" {
		t.Fatalf("notices: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = s.cli("notices", "--mute", "position_changed,starts_soon", "--quiet", "22-8", "--zone", "Europe/Berlin")
	if code != 0 || out != "Notices to admin: muted position_changed, starts_soon; quiet hours 22:00-08:00 Europe/Berlin.\n" {
		t.Fatalf("notices set: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = s.cli("notices", "--quiet", "late"); code != 1 || !strings.Contains(errOut, "22:00-08:00") {
		t.Errorf("bad quiet hours: exit %d, %s", code, errOut)
	}
	if out, _, _ = s.cli("notices", "--mute", "none", "--quiet", "off"); out != "Notices to admin: muted nothing; quiet hours none.\n" {
		t.Errorf("reset: %s", out)
	}
	out, errOut, code = s.cli("notices", "--via", "discord", "--via", "finished=email,slack")
	if want := "Notices to admin: muted nothing; quiet hours none.\nChannels: every kind by discord; finished by email,slack.\n"; code != 0 || out != want {
		t.Errorf("--via: exit %d\n%s%swant\n%s", code, out, errOut, want)
	}
	for _, bad := range []string{"pager", "finishd=email", "finished="} {
		if _, errOut, code = s.cli("notices", "--via", bad); code == 0 || errOut == "" {
			t.Errorf("--via %s: exit %d, %q", bad, code, errOut)
		}
	}
	out, _, _ = s.cli("notices", "--via", "finished=default")
	if want := "Notices to admin: muted nothing; quiet hours none.\nChannels: every kind by discord.\n"; out != want {
		t.Errorf("after finished=default:\n%swant\n%s", out, want)
	}
	if out, _, _ = s.cli("notices", "--via", "default"); out != "Notices to admin: muted nothing; quiet hours none.\n" {
		t.Errorf("after default: %s", out)
	}
}
