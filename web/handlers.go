package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request, a core.Actor) {
	u := User{Name: a.User, Admin: a.Admin, Projects: map[string]string{}}
	for p, role := range a.Roles {
		u.Projects[p] = string(role)
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request, a core.Actor) {
	nodes, err := s.svc.Nodes(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, nodeStatusJSON(n))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAddNode(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req NewNode
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	n := core.Node{Name: req.Name}
	for _, g := range req.GPUs {
		n.GPUs = append(n.GPUs, core.GPU{Index: g.Index, Name: g.Name, MemoryMiB: g.Memory, UUID: g.UUID, State: core.GPUState(g.State)})
	}
	added, err := s.svc.AddNode(r.Context(), a, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.changed()
	writeJSON(w, http.StatusCreated, nodeJSON(added))
}

func (s *Server) handleBook(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req BookRequest
	err := decode(w, r, &req)
	var start, end time.Time
	if err == nil {
		start, err = parseInstant("start", req.Start)
	}
	if err == nil {
		end, err = parseInstant("end", req.End)
	}
	if err != nil {
		s.metrics.booking("invalid")
		s.fail(w, r, err)
		return
	}
	res, err := s.svc.Book(r.Context(), a, core.BookRequest{
		GPUs: req.GPUs, Model: req.Model, Node: req.Node, SameNode: req.SameNode, Start: start, End: end,
		Note: req.Note, Project: req.Project, Owner: req.Owner, Key: r.Header.Get("Idempotency-Key"),
	})
	if err != nil {
		s.metrics.booking(string(core.ErrorCode(err)))
		s.fail(w, r, err)
		return
	}
	s.metrics.booking("ok")
	s.changed()
	w.Header().Set("Location", "/api/v1/reservations/"+res.Name())
	writeJSON(w, http.StatusCreated, reservationJSON(res, s.svc.Now()))
}

func (s *Server) handleReservations(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	f := core.ReservationFilter{Owner: q.Get("user"), Project: q.Get("project")}
	if mine, _ := strconv.ParseBool(q.Get("mine")); mine {
		f.Owner = a.User
	}
	var err error
	if f.From, err = optionalInstant(q, "from"); err == nil {
		f.To, err = optionalInstant(q, "to")
	}
	if err == nil {
		f.Limit, err = queryLimit(q)
	}
	for _, st := range splitList(q.Get("state")) {
		switch core.ReservationState(st) {
		case core.Confirmed, core.Cancelled, core.Released, core.NoShow:
			f.States = append(f.States, core.ReservationState(st))
		default:
			err = core.Errorf(core.CodeInvalid, "state %q: filter by confirmed, cancelled, released or no_show", st)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rs, err := s.svc.Reservations(r.Context(), a, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.svc.Now()
	out := make([]Reservation, 0, len(rs))
	for _, res := range rs {
		out = append(out, reservationJSON(res, now))
	}
	writeJSON(w, http.StatusOK, out)
}

// reservationOp is the shape of every handler that acts on one reservation.
func (s *Server) reservationOp(w http.ResponseWriter, r *http.Request, status int, op func(id int64) (core.Reservation, error)) {
	id, err := core.ParseReservationID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, core.Errorf(core.CodeNotFound, "%s", core.ErrorMessage(err)))
		return
	}
	res, err := op(id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, status, reservationJSON(res, s.svc.Now()))
}

func (s *Server) handleReservation(w http.ResponseWriter, r *http.Request, a core.Actor) {
	s.reservationOp(w, r, http.StatusOK, func(id int64) (core.Reservation, error) { return s.svc.Reservation(r.Context(), a, id) })
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request, a core.Actor) {
	s.reservationOp(w, r, http.StatusOK, s.changing(func(id int64) (core.Reservation, error) { return s.svc.Cancel(r.Context(), a, id) }))
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request, a core.Actor) {
	s.reservationOp(w, r, http.StatusOK, s.changing(func(id int64) (core.Reservation, error) { return s.svc.Release(r.Context(), a, id) }))
}

// changing wraps a reservation operation so that its success kicks the replan loop.
func (s *Server) changing(op func(id int64) (core.Reservation, error)) func(id int64) (core.Reservation, error) {
	return func(id int64) (core.Reservation, error) {
		res, err := op(id)
		if err == nil {
			s.changed()
		}
		return res, err
	}
}

func (s *Server) handleExtend(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req ExtendRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var ext core.ExtendRequest
	var err error
	switch {
	case req.By != "" && req.End != "":
		err = core.Errorf(core.CodeInvalid, "give either \"by\" or \"end\", not both")
	case req.By != "":
		ext.By, err = core.ParseDuration(req.By)
	case req.End != "":
		ext.End, err = parseInstant("end", req.End)
	default:
		err = core.Errorf(core.CodeInvalid, "give \"by\" (like \"1h\") or \"end\" (RFC 3339)")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reservationOp(w, r, http.StatusOK, s.changing(func(id int64) (core.Reservation, error) { return s.svc.Extend(r.Context(), a, id, ext) }))
}

func (s *Server) handleCalendar(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	from, to, err := parsePeriod(q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cal, err := s.svc.Calendar(r.Context(), a, core.CalendarQuery{From: from, To: to, User: q.Get("user"), Project: q.Get("project"), Model: q.Get("model")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, calendarJSON(cal))
}

func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request, a core.Actor) {
	us, err := s.svc.Users(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]User, 0, len(us))
	for _, u := range us {
		out = append(out, User{Name: u.Name, Admin: u.Admin, CreatedAt: u.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAddUser(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req User
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := s.svc.AddUser(r.Context(), a, core.User{Name: req.Name, Admin: req.Admin})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, User{Name: u.Name, Admin: u.Admin, CreatedAt: u.CreatedAt})
}

func (s *Server) handleChatLinks(w http.ResponseWriter, r *http.Request, a core.Actor) {
	cs, err := s.svc.ChatLinks(r.Context(), a, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]ChatLink, 0, len(cs))
	for _, c := range cs {
		out = append(out, chatLinkJSON(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleLinkChat(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req ChatLink
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.svc.LinkChat(r.Context(), a, core.ChatIdentity{Platform: req.Platform, Team: req.Team, ID: req.ID}, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, chatLinkJSON(c))
}

func (s *Server) handleProjects(w http.ResponseWriter, r *http.Request, a core.Actor) {
	ps, err := s.svc.Projects(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]Project, 0, len(ps))
	for _, p := range ps {
		out = append(out, projectJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAddProject(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req Project
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p := core.Project{Name: req.Name}
	for _, m := range req.Members {
		p.Members = append(p.Members, core.Member{User: m.User, Role: core.Role(m.Role)})
	}
	added, err := s.svc.AddProject(r.Context(), a, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, projectJSON(added))
}

func (s *Server) handleSetMember(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req Member
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.svc.SetMember(r.Context(), a, r.PathValue("name"), core.Member{User: req.User, Role: core.Role(req.Role)}); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req TokenRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	user := req.User
	if user == "" {
		user = a.User
	}
	tok, err := s.svc.CreateToken(r.Context(), a, user, req.Name, req.Admin)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, TokenResponse{User: user, Token: tok})
}

func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request, a core.Actor) {
	q := r.URL.Query()
	f := core.AuditFilter{Actor: q.Get("actor"), Object: q.Get("object")}
	var err error
	if f.Limit, err = queryLimit(q); err != nil {
		s.fail(w, r, err)
		return
	}
	es, err := s.svc.AuditLog(r.Context(), a, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]AuditEntry, 0, len(es))
	for _, e := range es {
		out = append(out, AuditEntry{At: e.At, Actor: e.Actor, Action: e.Action, Object: e.Object, Detail: e.Detail})
	}
	writeJSON(w, http.StatusOK, out)
}

// fail writes err and logs it when it is the server's fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil:
		// The client went away (or the server is stopping) before the
		// answer: nobody reads it, and it is not the server's failure.
		s.log.Debug("request abandoned", "method", r.Method, "path", r.URL.Path, "err", err)
	case status(err) >= 500:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, err)
}

func projectJSON(p core.Project) Project {
	out := Project{Name: p.Name, Members: []Member{}}
	for _, m := range p.Members {
		out.Members = append(out.Members, Member{User: m.User, Role: string(m.Role)})
	}
	return out
}

// parsePeriod reads the required "from" and "to" instants of a query.
func parsePeriod(q url.Values) (from, to time.Time, err error) {
	if from, err = parseInstant("from", q.Get("from")); err == nil {
		to, err = parseInstant("to", q.Get("to"))
	}
	return from, to, err
}

// parseInstant reads an RFC 3339 instant from a request field.
func parseInstant(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, core.Errorf(core.CodeInvalid, "%q is required (RFC 3339, like 2026-12-03T09:00:00Z)", field)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, core.Errorf(core.CodeInvalid, "%q: %q is not an RFC 3339 time like 2026-12-03T09:00:00Z", field, v)
	}
	return t.UTC(), nil
}

func optionalInstant(q url.Values, field string) (time.Time, error) {
	if q.Get(field) == "" {
		return time.Time{}, nil
	}
	return parseInstant(field, q.Get(field))
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// queryLimit reads the optional "limit" query parameter: 0 when absent.
func queryLimit(q url.Values) (int, error) {
	l := q.Get("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 {
		return 0, core.Errorf(core.CodeInvalid, "limit must be a positive number")
	}
	return n, nil
}
