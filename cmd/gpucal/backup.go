package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpucal/gpucal/store"
)

// runBackup copies the server's SQLite database to a file while the
// server runs (store.DB.Backup); restoring is putting the copy in the
// database's place while the server is stopped (docs/operations.md).
func runBackup(ctx context.Context, e *env, args []string) error {
	var cfg serverConfig
	var to string
	fs := newFlagSet("backup", e)
	fs.StringVar(&cfg.db, "db", "", "the database: sqlite:PATH (default: the server's, from GPUCAL_DB or --data)")
	fs.StringVar(&cfg.data, "data", envOr(e, "GPUCAL_DATA", defaultDataDir()), "the server's data folder (GPUCAL_DATA)")
	fs.StringVar(&to, "to", "", "the file to write (it must not exist); default: gpucal-backup-DATE-TIME.db in the data folder")
	if _, err := parseArgs(fs, args, 0, 0); err != nil {
		return err
	}
	if cfg.db == "" {
		cfg.db = e.getenv("GPUCAL_DB")
	}
	dsn := cfg.dsn()
	if !strings.HasPrefix(dsn, "sqlite:") {
		return usagef("gpucal backup copies SQLite databases; back PostgreSQL up with pg_dump (docs/operations.md)")
	}
	if path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "sqlite:"), "?"); !fileExists(path) {
		return usagef("there is no database at %s", path)
	}
	if to == "" {
		to = filepath.Join(cfg.data, "gpucal-backup-"+time.Now().UTC().Format("2006-01-02-150405")+".db")
	}
	db, err := store.Open(ctx, dsn, nil)
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	defer db.Close()
	start := time.Now()
	if err := db.Backup(ctx, to); err != nil {
		return err
	}
	fi, err := os.Stat(to)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Backed up to %s (%.1f MB in %s).\n", to, float64(fi.Size())/1e6, time.Since(start).Round(time.Millisecond))
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
