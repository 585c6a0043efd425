// Package migrations holds gpucal's database schema as embedded SQL files,
// one directory per dialect (sqlite/, postgres/). Files are named
// NNNN_name.sql, are applied in version order and are forward-only: a
// released file is never edited, a change is a new file. Both directories
// hold the same versions with the same names.
//
// The store package applies them at start-up; nothing else should import
// this package.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
)

// files holds the SQL of every dialect.
//
//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Migration is one schema change of one dialect.
type Migration struct {
	Version int    // from the file name, 1 for 0001_init.sql
	Name    string // "init"
	SQL     string
}

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// List returns the migrations of dialect ("sqlite" or "postgres") in
// version order. It fails on a badly named file or a repeated version.
func List(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	var out []Migration
	for _, e := range entries { // ReadDir sorts by name, so by version
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: %s/%s is not named NNNN_name.sql", dialect, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if len(out) > 0 && out[len(out)-1].Version == v {
			return nil, fmt.Errorf("migrations: %s has two files with version %d", dialect, v)
		}
		b, err := fs.ReadFile(files, dialect+"/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	return out, nil
}
