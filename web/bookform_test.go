package web

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucal/gpucal/core"
)

func TestBookForm(t *testing.T) {
	nine := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		form url.Values
		want core.BookRequest
		err  string
	}{
		{"rfc3339", url.Values{"gpus": {"4"}, "model": {"a100"}, "node": {"a100-1"}, "start": {"2026-12-03T10:00:00+01:00"},
			"end": {"2026-12-03T13:00:00Z"}, "note": {" llama "}, "project": {"nlp"}},
			core.BookRequest{GPUs: 4, Model: "a100", Node: "a100-1", Start: nine, End: nine.Add(4 * time.Hour), Note: "llama", Project: "nlp"}, ""},
		{"datetime-local in a zone", url.Values{"gpus": {"1"}, "start": {"2026-12-03T17:00"}, "end": {"2026-12-03T18:30"}, "tz": {"Asia/Shanghai"}},
			core.BookRequest{GPUs: 1, Start: nine, End: nine.Add(90 * time.Minute)}, ""},
		{"datetime-local in UTC", url.Values{"gpus": {"2"}, "start": {"2026-12-03T09:00"}, "end": {"2026-12-03T10:00:00"}},
			core.BookRequest{GPUs: 2, Start: nine, End: nine.Add(time.Hour)}, ""},
		{"no gpus", url.Values{"start": {"2026-12-03T09:00"}, "end": {"2026-12-03T10:00"}}, core.BookRequest{}, "GPUs: give a number"},
		{"zero gpus", url.Values{"gpus": {"0"}}, core.BookRequest{}, "GPUs: give a number"},
		{"bad zone", url.Values{"gpus": {"1"}, "tz": {"Mars/Base"}}, core.BookRequest{}, `time zone "Mars/Base"`},
		{"no start", url.Values{"gpus": {"1"}, "end": {"2026-12-03T10:00"}}, core.BookRequest{}, "start is required"},
		{"bad end", url.Values{"gpus": {"1"}, "start": {"2026-12-03T09:00"}, "end": {"tomorrow"}}, core.BookRequest{}, `end: "tomorrow" is not a time`},
		{"bad model", url.Values{"gpus": {"1"}, "start": {"2026-12-03T09:00"}, "end": {"2026-12-03T10:00"}, "model": {"?!"}}, core.BookRequest{}, "is not a GPU model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bookForm(tc.form)
			if tc.err != "" {
				if err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(core.ErrorMessage(err), tc.err) {
					t.Fatalf("err = %v, want invalid with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzBookForm(f *testing.F) {
	f.Add("4", "a100", "2026-12-03T09:00", "2026-12-03T13:00", "Asia/Shanghai")
	f.Add("1", "", "2026-12-03T09:00:00Z", "2026-12-03T10:00:00+08:00", "")
	f.Add("-1", "h100", "x", "", "Local")
	f.Fuzz(func(t *testing.T, gpus, model, start, end, tz string) {
		req, err := bookForm(url.Values{"gpus": {gpus}, "model": {model}, "start": {start}, "end": {end}, "tz": {tz}})
		if err != nil {
			if core.ErrorCode(err) != core.CodeInvalid {
				t.Fatalf("error %v is not CodeInvalid", err)
			}
			return
		}
		if req.GPUs < 1 || req.Start.Location() != time.UTC || req.End.Location() != time.UTC {
			t.Errorf("accepted %+v", req)
		}
	})
}
