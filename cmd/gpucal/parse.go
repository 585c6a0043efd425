package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gpucal/gpucal/bot"
)

// runParse shows what the chat layer reads in a /gpu text, without a
// server: gpucal parse --now 2026-12-02T15:04:00+08:00 --tz Asia/Shanghai book 4 a100 tomorrow 9-13.
// It prints the Command as JSON; when the text cannot be read it prints the
// polite error as {"error": …} and exits 1.
func runParse(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("parse", e)
	nowFlag := fs.String("now", "", "the current time, RFC 3339 (default: now)")
	tzFlag := fs.String("tz", "", "the user's time zone, e.g. Asia/Shanghai (default: local)")
	pos, err := parseArgs(fs, args, 1, -1)
	if err != nil {
		return err
	}
	now := time.Now()
	if *nowFlag != "" {
		if now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			return usagef("--now %q is not an RFC 3339 time like 2026-12-02T15:04:00+08:00", *nowFlag)
		}
	}
	loc := time.Local
	if *tzFlag != "" {
		if loc, err = time.LoadLocation(*tzFlag); err != nil {
			return usagef("--tz %q is not a time zone like Europe/Berlin", *tzFlag)
		}
	}
	cmd, perr := bot.Parse(strings.Join(pos, " "), now, loc)
	if perr != nil {
		b, _ := json.MarshalIndent(struct {
			Error string `json:"error"`
		}{perr.Error()}, "", "  ")
		fmt.Fprintln(e.stdout, string(b))
		return errReported
	}
	return printJSON(e.stdout, cmd)
}
