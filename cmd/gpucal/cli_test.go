package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCommandLineErrors checks that mistakes on the command line get exit
// code 2 and a message that says what to do, before anything is sent.
func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"nodes", "--tz", "Mars/Olympus_Mons"}, "unknown time zone"},
		{[]string{"book", "4", "a100", "--from", "soon", "--to", "+1h"}, "cannot read \"soon\""},
		{[]string{"book", "four", "--from", "now", "--for", "1h"}, "not a number of GPUs"},
		{[]string{"book", "4", "--from", "now"}, "--to or the length with --for"},
		{[]string{"book", "4", "--from", "now", "--to", "+1h", "--for", "1h"}, "not both"},
		{[]string{"book", "4", "--to", "+1h"}, "give the start"},
		{[]string{"book", "4", "--from", "now", "--for", "forever"}, "cannot read"},
		{[]string{"extend", "r1"}, "usage: gpucal extend"},
		{[]string{"extend", "r1", "soon"}, "not a duration"},
		{[]string{"calendar", "--days", "400"}, "between 1 and 31"},
		{[]string{"cancel"}, "at least 1 argument"},
		{[]string{"cancel", "r1", "r2"}, "unexpected argument"},
		{[]string{"nodes", "--bogus"}, "flag provided but not defined"},
		{[]string{"teleport"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			e := &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
				// An unreachable server: nothing may be sent anyway.
				return map[string]string{"GPUCAL_SERVER": "http://127.0.0.1:1", "GPUCAL_CONFIG": t.TempDir() + "/none.json"}[k]
			}}
			if code := run(context.Background(), e, tt.args); code != 2 {
				t.Errorf("exit code = %d, want 2 (stderr: %s)", code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut.String(), tt.want)
			}
		})
	}
}
