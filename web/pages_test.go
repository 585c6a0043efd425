package web

import (
	"bytes"
	"strings"
	"testing"
)

// TestNotBuiltPage checks what a fresh clone's binary shows: the calendar
// page says the assets are not built and how to build them.
func TestNotBuiltPage(t *testing.T) {
	u := loadUI()
	for _, lang := range langs {
		var buf bytes.Buffer
		d := pageData{Lang: lang, T: messages[lang], Built: false}
		if err := u.pages.ExecuteTemplate(&buf, "calendar.html", d); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		if !strings.Contains(page, `id="not-built"`) || !strings.Contains(page, "make build") || strings.Contains(page, "event-calendar.min.js") {
			t.Errorf("%s: the unbuilt page does not say how to build the assets, or loads them anyway:\n%s", lang, page)
		}
	}
}
