package migrations

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDialectsAgree checks that both dialects have the same versions with
// the same names, numbered 1, 2, 3… without gaps.
func TestDialectsAgree(t *testing.T) {
	type entry struct {
		Version int
		Name    string
	}
	list := func(dialect string) []entry {
		t.Helper()
		ms, err := List(dialect)
		if err != nil {
			t.Fatal(err)
		}
		var out []entry
		for i, m := range ms {
			if m.Version != i+1 {
				t.Errorf("%s: migration %d has version %d, want %d", dialect, i, m.Version, i+1)
			}
			if m.SQL == "" {
				t.Errorf("%s: migration %d is empty", dialect, m.Version)
			}
			out = append(out, entry{m.Version, m.Name})
		}
		return out
	}
	sqlite, postgres := list("sqlite"), list("postgres")
	if len(sqlite) == 0 {
		t.Fatal("no migrations")
	}
	if diff := cmp.Diff(sqlite, postgres); diff != "" {
		t.Errorf("sqlite and postgres migrations differ (-sqlite +postgres):\n%s", diff)
	}
}

func TestUnknownDialect(t *testing.T) {
	if _, err := List("oracle"); err == nil {
		t.Error("List(oracle) succeeded, want an error")
	}
}
