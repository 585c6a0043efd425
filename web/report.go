package web

import (
	"net/http"
	"time"

	"github.com/gpucal/gpucal/core"
)

// handleReport serves GET /api/v1/report?from=…&to=… (RFC 3339; the last
// seven days by default): the usage report behind `gpucal report` and the
// weekly digest.
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	now := s.svc.Now()
	from, to := now.Add(-7*24*time.Hour), now
	if v := q.Get("from"); v != "" {
		t, err := parseInstant("from", v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		from = t
	}
	if v := q.Get("to"); v != "" {
		t, err := parseInstant("to", v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		to = t
	}
	rep, err := s.svc.Report(r.Context(), a, core.ReportQuery{From: from, To: to})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ReportToJSON(rep))
}
