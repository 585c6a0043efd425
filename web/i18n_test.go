package web

import (
	"maps"
	"slices"
	"testing"
)

func TestPickLang(t *testing.T) {
	for _, tc := range []struct{ query, header, want string }{
		{"", "", "en"},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"", "en-US,en;q=0.9,zh-CN;q=0.8", "en"},
		{"", "de-DE,de;q=0.9,zh;q=0.5", "zh"},
		{"", "zh;q=0.2,en;q=0.7", "en"},
		{"", "zh;q=0,fr", "en"},
		{"", "zh-Hans-CN", "zh"},
		{"", "zh;q=abc", "en"},
		{"zh", "en", "zh"},
		{"EN", "zh", "en"},
		{"klingon", "zh-TW", "zh"},
	} {
		if got := pickLang(tc.query, tc.header); got != tc.want {
			t.Errorf("pickLang(%q, %q) = %q, want %q", tc.query, tc.header, got, tc.want)
		}
	}
}

// TestMessages checks that both languages have every string.
func TestMessages(t *testing.T) {
	en, zh := slices.Sorted(maps.Keys(messages["en"])), slices.Sorted(maps.Keys(messages["zh"]))
	if !slices.Equal(en, zh) {
		t.Errorf("the languages' keys differ:\nen: %v\nzh: %v", en, zh)
	}
	for l, m := range messages {
		for k, v := range m {
			if v == "" {
				t.Errorf("%s: %q is empty", l, k)
			}
		}
	}
}

func FuzzPickLang(f *testing.F) {
	f.Add("", "zh-CN,zh;q=0.9,en;q=0.8")
	f.Add("zh", "")
	f.Add("", ";q=,,;;q=1e309,zh;q=NaN")
	f.Fuzz(func(t *testing.T, query, header string) {
		if got := pickLang(query, header); !slices.Contains(langs, got) {
			t.Errorf("pickLang(%q, %q) = %q, not a language we speak", query, header, got)
		}
	})
}
