package web

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpucal/gpucal/core"
)

// bookForm reads the calendar's booking form (POST /book): gpus, model,
// node, start, end, note, project and tz. Times are RFC 3339, or a
// datetime-local value ("2026-12-03T09:00") in the zone tz names (UTC
// when absent), which is what a browser without the page's script sends.
func bookForm(f url.Values) (core.BookRequest, error) {
	var req core.BookRequest
	n, err := strconv.Atoi(strings.TrimSpace(f.Get("gpus")))
	if err != nil || n < 1 || n > 4096 {
		return req, core.Errorf(core.CodeInvalid, "GPUs: give a number from 1, like 4")
	}
	req.GPUs = n
	loc := time.UTC
	if tz := strings.TrimSpace(f.Get("tz")); tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil || tz == "Local" || len(tz) > 64 {
			return req, core.Errorf(core.CodeInvalid, "time zone %q: give a name like Europe/Berlin", tz)
		}
	}
	if req.Start, err = formTime("start", f.Get("start"), loc); err != nil {
		return req, err
	}
	if req.End, err = formTime("end", f.Get("end"), loc); err != nil {
		return req, err
	}
	req.Model = strings.TrimSpace(f.Get("model"))
	if _, ok := core.ParseModel(req.Model); !ok {
		return req, core.Errorf(core.CodeInvalid, "%q is not a GPU model", req.Model)
	}
	req.Node = strings.TrimSpace(f.Get("node"))
	req.Note = strings.TrimSpace(f.Get("note"))
	req.Project = strings.TrimSpace(f.Get("project"))
	return req, nil
}

// formTime reads one time field of the booking form.
func formTime(field, v string, loc *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, core.Errorf(core.CodeInvalid, "%s is required", field)
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, core.Errorf(core.CodeInvalid, "%s: %q is not a time like 2026-12-03T09:00", field, v)
}
