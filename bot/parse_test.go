package bot

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/olebedev/when/rules"
	"github.com/olebedev/when/rules/zh"

	"github.com/gpucal/gpucal/core"
)

var update = flag.Bool("update", false, "rewrite testdata/parse.golden with what Parse returns now")

// The golden file holds phrasings and what Parse must make of them, one
// case a pair of lines:
//
//	@ 2026-12-02T15:04 Asia/Shanghai      the reference time and zone for the cases below
//	> book 4 a100 tomorrow 9-13            the text
//	= book gpus=4 model=a100 start=…      the command, times in the zone above
//	= error: I read …                      or the error
//
// Lines starting with # are comments. -update rewrites the "=" lines; each
// one was then checked by hand, so a diff is a change in behaviour.
const golden = "testdata/parse.golden"

func TestParseGolden(t *testing.T) {
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out   []string
		now   time.Time
		loc   *time.Location
		input string
		cases int
	)
	for i, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "@ "):
			f := strings.Fields(line[2:])
			if len(f) != 2 {
				t.Fatalf("%s:%d: want @ TIME ZONE", golden, i+1)
			}
			if loc, err = time.LoadLocation(f[1]); err != nil {
				t.Skipf("no tzdata for %s: %v", f[1], err)
			}
			describeLoc = loc
			if now, err = time.ParseInLocation("2006-01-02T15:04", f[0], loc); err != nil {
				t.Fatalf("%s:%d: %v", golden, i+1, err)
			}
		case strings.HasPrefix(line, "> "):
			input = line[2:]
		case strings.HasPrefix(line, "= "):
			if loc == nil {
				t.Fatalf("%s:%d: a case before the first @ line", golden, i+1)
			}
			cases++
			got := describe(Parse(input, now, loc))
			if *update {
				line = "= " + got
			} else if want := line[2:]; got != want {
				t.Errorf("%s:%d: Parse(%q) at %s %s:\n got: %s\nwant: %s", golden, i+1, input, now.Format("Mon 2006-01-02 15:04"), loc, got, want)
			}
		}
		out = append(out, line)
	}
	if cases < 150 {
		t.Errorf("%s has %d cases, want at least 150", golden, cases)
	}
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// describe writes a Parse result on one line, times in the command's zone
// so that a person can check them.
func describe(c Command, err error) string {
	if err != nil {
		var perr *ParseError
		if !errors.As(err, &perr) {
			return "not a ParseError: " + err.Error()
		}
		return "error: " + err.Error()
	}
	var b strings.Builder
	b.WriteString(string(c.Kind))
	field := func(name string, v any) { fmt.Fprintf(&b, " %s=%v", name, v) }
	if c.GPUs != 0 {
		field("gpus", c.GPUs)
	}
	if c.Model != "" {
		field("model", c.Model)
	}
	if c.ASAP {
		b.WriteString(" asap")
	}
	when := func(t time.Time) string { return t.In(describeLoc).Format("Mon 2006-01-02 15:04 MST") }
	if !c.Start.IsZero() {
		field("start", strings.ReplaceAll(when(c.Start), " ", "_"))
	}
	if !c.End.IsZero() {
		field("end", strings.ReplaceAll(when(c.End), " ", "_"))
	}
	if c.Duration != 0 {
		field("for", time.Duration(c.Duration))
	}
	if c.By != 0 {
		field("by", time.Duration(c.By))
	}
	for _, f := range []struct{ name, v string }{{"id", c.ID}, {"zone", c.Zone}, {"project", c.Project}, {"note", c.Note}, {"ambiguous", c.Ambiguous}} {
		if f.v != "" {
			field(f.name, fmt.Sprintf("%q", f.v))
		}
	}
	if n := c.Notify; n != nil {
		kinds := func(ks []core.EventKind) string {
			s := make([]string, len(ks))
			for i, k := range ks {
				s[i] = string(k)
			}
			return strings.Join(s, ",")
		}
		for _, f := range []struct{ name, v string }{{"mute", kinds(n.Mute)}, {"unmute", kinds(n.Unmute)}, {"quiet", n.Quiet},
			{"via", strings.Join(n.Via, ",")}, {"for", string(n.For)}} {
			if f.v != "" {
				field(f.name, f.v)
			}
		}
	}
	if c.Relative {
		b.WriteString(" relative")
	}
	field("lang", c.Lang)
	return b.String()
}

// describeLoc is the zone describe writes times in; the golden test sets it.
var describeLoc = time.UTC

func TestParseErrorIsOneLine(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 4, 0, 0, time.UTC)
	for _, in := range []string{"book 4 a100 tomorow", "预定 4张A100 明天", strings.Repeat("book ", 200), "bokk 4 a100", "cancel", "延长 r42"} {
		_, err := Parse(in, now, time.UTC)
		var perr *ParseError
		if !errors.As(err, &perr) {
			t.Fatalf("Parse(%q) = %v, want a *ParseError", in, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || !strings.Contains(msg, "/gpu ") {
			t.Errorf("Parse(%q): %q is not one line with an example", in, msg)
		}
		if got, want := perr.Lang, language(in); got != want {
			t.Errorf("Parse(%q): error in %q, want %q", in, got, want)
		}
	}
}

func TestParseExampleMessage(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 4, 0, 0, time.UTC)
	_, err := Parse("book 4 a100 tomorow", now, time.UTC)
	want := `I read "book 4 a100 tomorow" as a booking of 4×A100 but found no time in "tomorow"; try: /gpu book 2 a100 tomorrow 9-13`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestParseJSON(t *testing.T) {
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 12, 2, 15, 4, 0, 0, sh)
	c, err := Parse("/gpu book 4 a100 tomorrow 9-13 for llama finetune", now, sh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"book","gpus":4,"model":"a100","start":"2026-12-03T01:00:00Z","end":"2026-12-03T05:00:00Z","note":"llama finetune","relative":true,"lang":"en"}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

// TestDateLibraryPanicsAreRecovered registers when's own Chinese month-date
// rule, which matches the empty string and panics on most input (the reason
// parse_dates.go replaces it), and checks that Parse still answers politely.
func TestDateLibraryPanicsAreRecovered(t *testing.T) {
	saved := dateRules
	t.Cleanup(func() { dateRules = saved })
	dateRules = append(slices.Clone(saved), dateRule{Rule: zh.ExactMonthDate(rules.Override)})

	now := time.Date(2026, 12, 2, 15, 4, 0, 0, time.UTC)
	if _, err := readDay("明天", now); err == nil || !strings.Contains(err.Error(), "date library") {
		t.Errorf("readDay with the library's month-date rule: err = %v, want a recovered panic", err)
	}
	_, err := Parse("预定 明天 9点到13点 2卡", now, time.UTC)
	var perr *ParseError
	if !errors.As(err, &perr) {
		t.Fatalf("Parse = %v, want a *ParseError", err)
	}
}
