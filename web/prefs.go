package web

import (
	"fmt"
	"net/http"

	"github.com/gpucal/gpucal/core"
)

// NotifyPrefs is a person's notification settings on the wire. Quiet is
// "22:00-08:00" in Zone, or "" for none; Email is where notices by email
// go ("" for none).
type NotifyPrefs struct {
	Muted []string `json:"muted"`
	Quiet string   `json:"quiet"`
	Zone  string   `json:"zone"`
	Email string   `json:"email"`
	// Via is the channels ("slack", "discord", "email") each kind of
	// notice goes to, "*" for every kind not named; a kind without an
	// entry goes everywhere the person can be reached.
	Via map[string][]string `json:"via"`
}

func notifyPrefsJSON(p core.NotifyPrefs) NotifyPrefs {
	out := NotifyPrefs{Muted: []string{}, Zone: p.Zone, Via: map[string][]string{}}
	for _, k := range p.Muted {
		out.Muted = append(out.Muted, string(k))
	}
	for k, chans := range p.Via {
		out.Via[string(k)] = chans
	}
	if p.QuietFrom != p.QuietTo {
		out.Quiet = fmt.Sprintf("%02d:%02d-%02d:%02d", p.QuietFrom/60, p.QuietFrom%60, p.QuietTo/60, p.QuietTo%60)
	}
	return out
}

func (s *Server) handleNotifyPrefs(w http.ResponseWriter, r *http.Request, a core.Actor) {
	p, err := s.svc.NotifyPrefsOf(r.Context(), a, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := notifyPrefsJSON(p)
	if out.Email, err = s.svc.EmailOf(r.Context(), p.User); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleSetNotifyPrefs(w http.ResponseWriter, r *http.Request, a core.Actor) {
	var req NotifyPrefs
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	from, to, err := core.ParseQuietHours(req.Quiet)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := core.NotifyPrefs{User: r.PathValue("name"), QuietFrom: from, QuietTo: to, Zone: req.Zone}
	for _, k := range req.Muted {
		p.Muted = append(p.Muted, core.EventKind(k))
	}
	if len(req.Via) > 0 {
		p.Via = make(map[core.EventKind][]string, len(req.Via))
		for k, chans := range req.Via {
			p.Via[core.EventKind(k)] = chans
		}
	}
	// Both are checked before either is stored: bad input changes nothing.
	if err := core.CheckEmail(req.Email); err != nil {
		s.fail(w, r, err)
		return
	}
	email, err := s.svc.EmailOf(r.Context(), p.User)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p, err = s.svc.SetNotifyPrefs(r.Context(), a, p); err != nil {
		s.fail(w, r, err)
		return
	}
	if email != req.Email {
		if err := s.svc.SetEmail(r.Context(), a, p.User, req.Email); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	out := notifyPrefsJSON(p)
	out.Email = req.Email
	writeJSON(w, http.StatusOK, out)
}
