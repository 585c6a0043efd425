package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseCommand runs gpucal parse: a command as JSON, an unreadable
// text as {"error": …} with exit 1, bad flags with exit 2.
func TestParseCommand(t *testing.T) {
	if _, err := time.LoadLocation("Asia/Shanghai"); err != nil {
		t.Skip("no tzdata:", err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     map[string]any
		wantErr  string // in the JSON "error" or on stderr
	}{
		{
			name: "booking",
			args: []string{"parse", "--now", "2026-12-02T15:04:00+08:00", "--tz", "Asia/Shanghai", "book", "4", "a100", "tomorrow", "9-13", "for", "llama", "finetune"},
			want: map[string]any{"kind": "book", "gpus": 4.0, "model": "a100", "start": "2026-12-03T01:00:00Z", "end": "2026-12-03T05:00:00Z",
				"note": "llama finetune", "relative": true, "lang": "en"},
		},
		{
			name: "flags after the text",
			args: []string{"parse", "预定 明天上午9点到下午1点 4张A100", "--tz", "Asia/Shanghai", "--now", "2026-12-02T15:04:00+08:00"},
			want: map[string]any{"kind": "book", "gpus": 4.0, "model": "a100", "start": "2026-12-03T01:00:00Z", "end": "2026-12-03T05:00:00Z",
				"relative": true, "lang": "zh"},
		},
		{
			name:     "unreadable",
			args:     []string{"parse", "--now", "2026-12-02T15:04:00+08:00", "book", "4", "a100", "tomorow"},
			wantCode: 1,
			wantErr:  `found no time in "tomorow"`,
		},
		{name: "bad now", args: []string{"parse", "--now", "tomorrow", "queue"}, wantCode: 2, wantErr: "RFC 3339"},
		{name: "bad zone", args: []string{"parse", "--tz", "Mars/Olympus", "queue"}, wantCode: 2, wantErr: "time zone"},
		{name: "no text", args: []string{"parse"}, wantCode: 2, wantErr: "at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			e := &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
			if code := run(context.Background(), e, tt.args); code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tt.wantCode, out.String(), errOut.String())
			}
			if tt.wantCode == 2 {
				if !strings.Contains(errOut.String(), tt.wantErr) {
					t.Errorf("stderr %q does not say %q", errOut.String(), tt.wantErr)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
			}
			if tt.wantErr != "" {
				if msg, _ := got["error"].(string); !strings.Contains(msg, tt.wantErr) {
					t.Errorf("error %q does not say %q", msg, tt.wantErr)
				}
				return
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all: %s)", k, got[k], v, out.String())
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("fields %v, want exactly %v", got, tt.want)
			}
		})
	}
}
