package email_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/notify"
	"github.com/gpucal/gpucal/notify/email"
)

// smtpServer is a small SMTP server without TLS that keeps what it is
// sent, and refuses the mailbox nobody@example.org with 550.
type smtpServer struct {
	ln   net.Listener
	mu   sync.Mutex
	mail []string // DATA of each message
}

func newSMTPServer(t *testing.T) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpServer) serve(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	say := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	say("220 fake ESMTP")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250-fake")
			say("250 8BITMIME")
		case strings.HasPrefix(cmd, "RCPT TO:") && strings.Contains(cmd, "NOBODY@"):
			say("550 5.1.1 no such mailbox")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RCPT"), cmd == "NOOP", cmd == "RSET":
			say("250 OK")
		case cmd == "DATA":
			say("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.mail = append(s.mail, b.String())
			s.mu.Unlock()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("502 5.5.2 command not recognized")
		}
	}
}

func (s *smtpServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func TestSend(t *testing.T) {
	srv := newSMTPServer(t)
	addresses := map[string]string{"alice": "alice@example.org", "nobody": "nobody@example.org"}
	m, err := email.New(email.Config{Host: "127.0.0.1", Port: srv.port(), TLS: "none", From: "gpucal@example.org",
		Address: func(_ context.Context, user string) (string, error) { return addresses[user], nil },
		Render: func(_ context.Context, user string, m notify.Message) (string, string) {
			return "gpucal: j42 开始了", "Hello " + user + ": " + m.Text
		}})
	if err != nil {
		t.Fatal(err)
	}
	msg := notify.Message{Key: "started:j42→alice→email", Kind: core.EventStarted, Text: "j42 started on node-1."}
	id, err := m.Send(context.Background(), "alice", msg)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Send(context.Background(), "alice", msg)
	if id == "" || id != again {
		t.Errorf("message IDs %q and %q; want one ID per delivery key", id, again)
	}
	srv.mu.Lock()
	got := srv.mail[0]
	srv.mu.Unlock()
	for _, want := range []string{"To: <alice@example.org>", "From: <gpucal@example.org>", "Message-ID: " + id, "Hello alice: j42 started on node-1.", "Subject: =?UTF-8?"} {
		if !strings.Contains(got, want) {
			t.Errorf("the mail lacks %q:\n%s", want, got)
		}
	}
	var perm *notify.PermanentError
	if _, err := m.Send(context.Background(), "carol", msg); !errors.As(err, &perm) {
		t.Errorf("someone without an address: %v; want a permanent error", err)
	}
	if _, err := m.Send(context.Background(), "nobody", msg); !errors.As(err, &perm) {
		t.Errorf("a mailbox the server refuses (550): %v; want a permanent error", err)
	}
	srv.ln.Close()
	if _, err := m.Send(context.Background(), "alice", msg); err == nil || errors.As(err, &perm) {
		t.Errorf("the server gone: %v; want an error to retry", err)
	}
}

func TestParseURL(t *testing.T) {
	c, err := email.ParseURL("smtp://gpucal:s3cret@mail.example.org:587?from=gpucal@example.org&tls=starttls")
	if err != nil || c.Host != "mail.example.org" || c.Port != 587 || c.Username != "gpucal" || c.Password != "s3cret" || c.From != "gpucal@example.org" || c.TLS != "starttls" {
		t.Errorf("ParseURL = %+v, %v", c, err)
	}
	for _, bad := range []string{"", "mail.example.org", "http://mail.example.org?from=a@b", "smtp://mail.example.org", "smtp://mail.example.org:99999?from=a@b"} {
		if _, err := email.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted it", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	f.Add("smtp://u:p@h:25?from=a@b")
	f.Add("smtp://h?from=x")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := email.ParseURL(s)
		if err == nil && (c.Host == "" || c.From == "" || c.Port < 0 || c.Port > 65535) {
			t.Fatalf("ParseURL(%q) = %+v", s, c)
		}
	})
}

// TestPostFile: a report goes out as a mail with its text as the body,
// its first line as the subject, and the chart attached (base64, as
// image/png), decoding back to the same bytes.
func TestPostFile(t *testing.T) {
	srv := newSMTPServer(t)
	m, err := email.New(email.Config{Host: "127.0.0.1", Port: srv.port(), TLS: "none", From: "gpucal@example.org",
		Address: func(context.Context, string) (string, error) { return "", nil },
		Render:  func(context.Context, string, notify.Message) (string, string) { return "", "" }})
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("chart ", 40))
	if err := m.PostFile(context.Background(), "ops@example.org", "GPU digest, 30 Nov – 7 Dec\n39% used.", "gpucal-digest.png", png); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	got := srv.mail[0]
	srv.mu.Unlock()
	for _, want := range []string{"To: <ops@example.org>", "Subject: =?UTF-8?", "39% used.", `filename="gpucal-digest.png"`, "Content-Type: image/png"} {
		if !strings.Contains(got, want) {
			t.Errorf("the mail lacks %q:\n%s", want, got)
		}
	}
	b64 := base64.StdEncoding.EncodeToString(png)
	if !strings.Contains(strings.ReplaceAll(got, "\r\n", ""), b64) {
		t.Errorf("the attachment is not the chart's bytes in base64:\n%s", got)
	}
	var perm *notify.PermanentError
	if err := m.PostFile(context.Background(), "nobody@example.org", "x", "a.png", png); !errors.As(err, &perm) {
		t.Errorf("a refused mailbox: %v; want a permanent error", err)
	}
}
