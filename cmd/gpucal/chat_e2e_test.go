package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucal/gpucal/store/storetest"
	"github.com/gpucal/gpucal/web"
)

// TestSlackHTTPBooking is issue 6's acceptance path: a running server in
// Slack HTTP mode books from a signed /gpu command and answers within
// Slack's 3 s; the same body with a wrong signature gets 401 and changes
// nothing.
func TestSlackHTTPBooking(t *testing.T) {
	const secret = "e2e-signing-secret"
	users := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth.test":
			fmt.Fprint(w, `{"ok":true,"team_id":"T1","user_id":"UBOT"}`)
		case "/users.info":
			fmt.Fprint(w, `{"ok":true,"user":{"id":"U7","team_id":"T1","name":"carol","real_name":"Carol","tz":"UTC","profile":{"email":"carol@example.org"}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(users.Close)
	// The secrets come from the environment, as they should in production.
	t.Setenv("GPUCAL_SLACK_BOT_TOKEN", "xoxb-e2e")
	t.Setenv("GPUCAL_SLACK_SIGNING_SECRET", secret)
	s := startServer(t, storetest.SQLite(t), "--slack-mode", "http", "--slack-api-url", users.URL+"/")
	ctx := context.Background()
	admin := s.client("t0")
	addNodes(t, admin, 1)

	body := url.Values{"team_id": {"T1"}, "user_id": {"U7"}, "command": {"/gpu"}, "text": {"book 2 a100 tomorrow 10-12"},
		"trigger_id": {"e2e-1"}, "response_url": {users.URL + "/respond"}}.Encode()
	send := func(key string) (int, string, time.Duration) {
		t.Helper()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte("v0:" + ts + ":" + body))
		req, _ := http.NewRequest(http.MethodPost, s.url+"/slack/commands", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), time.Since(start)
	}
	list := func() []web.Reservation {
		t.Helper()
		rs, err := admin.Reservations(ctx, web.ReservationQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	if code, _, _ := send("not the secret"); code != http.StatusUnauthorized {
		t.Fatalf("a wrongly signed command got %d, want 401", code)
	}
	if rs := list(); len(rs) != 0 {
		t.Fatalf("a wrongly signed command booked %+v", rs)
	}
	code, reply, took := send(secret)
	if code != http.StatusOK || took > 3*time.Second || !strings.Contains(reply, "Booked 2×A100") {
		t.Fatalf("status %d after %v: %s", code, took, reply)
	}
	rs := list()
	if len(rs) != 1 || rs[0].Owner != "carol" || len(rs[0].GPUs) != 2 || rs[0].Start.UTC().Hour() != 10 ||
		rs[0].End.Sub(rs[0].Start) != 2*time.Hour || rs[0].Start.Before(time.Now()) || rs[0].Start.After(time.Now().Add(48*time.Hour)) {
		t.Fatalf("reservations %+v; want carol's 2 GPUs tomorrow 10:00–12:00 UTC", rs)
	}
	t.Logf("the signed command booked %s and answered in %v", rs[0].ID, took)

	// carol was created on first use; an admin sees her link and links
	// another Slack person to an existing user.
	if out, errOut, code := s.cli("user", "links", "carol"); code != 0 || !strings.Contains(out, "slack    T1/U7  zone -") {
		t.Errorf("user links carol: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := s.cli("user", "link", "admin", "--slack", "T1/U9"); code != 0 || out != "slack T1/U9 now acts as admin.\n" {
		t.Errorf("user link: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := s.cli("user", "link", "admin", "--slack", "T1"); code != 2 || !strings.Contains(errOut, "WORKSPACE_ID/USER_ID") {
		t.Errorf("user link with a bad identity: exit %d, %s", code, errOut)
	}
}

// TestSecretsStayOutOfHelp: tokens given in the environment never appear in
// the help or in a usage error, which flag prints with every default.
func TestSecretsStayOutOfHelp(t *testing.T) {
	for _, args := range [][]string{{"server", "--help"}, {"server", "--no-such-flag"}, {"demo", "--help"}} {
		var out strings.Builder
		e := &env{stdout: &out, stderr: &out, getenv: func(k string) string {
			return map[string]string{"GPUCAL_SLACK_BOT_TOKEN": "xoxb-secret-1", "GPUCAL_SLACK_SIGNING_SECRET": "signing-secret-2",
				"GPUCAL_DISCORD_TOKEN": "discord-secret-3", "GPUCAL_DB": "postgres://gpucal:db-secret-4@db/gpucal",
				"GPUCAL_NOTIFY_GROUPS": "feishu=https://open.feishu.cn/open-apis/bot/v2/hook/t|group-secret-5",
				"GPUCAL_SMTP_URL":      "smtp://gpucal:smtp-secret-6@mail.example.org:587?from=gpucal@example.org"}[k]
		}}
		run(context.Background(), e, args)
		for _, secret := range []string{"xoxb-secret-1", "signing-secret-2", "discord-secret-3", "db-secret-4", "group-secret-5", "smtp-secret-6"} {
			if strings.Contains(out.String(), secret) {
				t.Errorf("gpucal %s printed %s", strings.Join(args, " "), secret)
			}
		}
	}
}
