// Package email is gpucal's notices by email, over SMTP with
// github.com/wneessen/go-mail: a notify.Channel that mails a person at the
// address their gpucal user has. Each message's Message-ID is derived
// from its delivery's key, so a mail system that keeps Message-IDs drops
// a repeat sent after a crash.
package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"

	"github.com/gpucal/gpucal/notify"
)

// Config is how to reach the SMTP server and whom to write to.
type Config struct {
	Host     string
	Port     int // 587 for STARTTLS, 465 for TLS, 25 for none, by default
	Username string
	Password string
	From     string // the sender, "gpucal@example.org"
	// TLS is "starttls" (the default: required), "tls" (implicit, port
	// 465) or "none" (only for a relay on the same host or a test).
	TLS string
	// Address returns the email address of a gpucal user ("" for none).
	Address func(ctx context.Context, user string) (string, error)
	// Render words a notice: its subject and its plain-text body.
	Render func(ctx context.Context, user string, m notify.Message) (subject, body string)
}

// Mailer sends notices by email.
type Mailer struct{ cfg Config }

// New checks cfg and returns a Mailer.
func New(cfg Config) (*Mailer, error) {
	switch {
	case cfg.Host == "":
		return nil, errors.New("email: the SMTP host is missing")
	case cfg.From == "":
		return nil, errors.New("email: the sender address (from) is missing")
	case cfg.Address == nil:
		return nil, errors.New("email: no way to look up addresses")
	}
	if cfg.TLS == "" {
		cfg.TLS = "starttls"
	}
	if cfg.Port == 0 {
		cfg.Port = map[string]int{"starttls": 587, "tls": 465, "none": 25}[cfg.TLS]
	}
	if cfg.TLS != "starttls" && cfg.TLS != "tls" && cfg.TLS != "none" {
		return nil, fmt.Errorf("email: tls %q: use starttls, tls or none", cfg.TLS)
	}
	if cfg.Render == nil {
		cfg.Render = func(_ context.Context, _ string, m notify.Message) (string, string) {
			return "gpucal: " + string(m.Kind), m.Text
		}
	}
	return &Mailer{cfg: cfg}, nil
}

// ParseURL reads the SMTP settings written as a URL:
// smtp://USER:PASSWORD@HOST:PORT?from=gpucal@example.org&tls=starttls.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "smtp" || u.Hostname() == "" {
		return Config{}, errors.New("write the SMTP server as smtp://USER:PASSWORD@HOST:PORT?from=gpucal@example.org")
	}
	c := Config{Host: u.Hostname(), From: u.Query().Get("from"), TLS: u.Query().Get("tls")}
	if p := u.Port(); p != "" {
		if c.Port, err = strconv.Atoi(p); err != nil || c.Port <= 0 || c.Port > 65535 {
			return Config{}, fmt.Errorf("the SMTP port %q is not a port", p)
		}
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if c.From == "" {
		return Config{}, errors.New("the SMTP URL needs ?from=ADDRESS, the sender")
	}
	return c, nil
}

// Send mails m to user and returns its Message-ID.
func (m *Mailer) Send(ctx context.Context, user string, msg notify.Message) (string, error) {
	to, err := m.cfg.Address(ctx, user)
	if err != nil {
		return "", err
	}
	if to == "" {
		return "", &notify.PermanentError{Err: fmt.Errorf("email: %s has no email address", user)}
	}
	subject, body := m.cfg.Render(ctx, user, msg)
	e := mail.NewMsg()
	if err := e.From(m.cfg.From); err != nil {
		return "", &notify.PermanentError{Err: fmt.Errorf("email: the sender %q: %w", m.cfg.From, err)}
	}
	if err := e.To(to); err != nil {
		return "", &notify.PermanentError{Err: fmt.Errorf("email: %s's address: %w", user, err)}
	}
	id := messageID(msg.Key)
	e.SetMessageIDWithValue(id)
	e.Subject(subject)
	e.SetBodyString(mail.TypeTextPlain, body)
	if err := m.deliver(ctx, e); err != nil {
		return "", fmt.Errorf("email to %s: %w", user, err)
	}
	return "<" + id + ">", nil
}

// messageID is the Message-ID of the mail sent under key, without the
// angle brackets.
func messageID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:12]) + "@gpucal"
}

// PostFile mails a report to the address to: the text as the body (its
// first line as the subject) and the file attached, with a Message-ID
// from the file's name, so that a mail system that keeps Message-IDs
// drops a second copy of the same report.
func (m *Mailer) PostFile(ctx context.Context, to, text, filename string, data []byte) error {
	e := mail.NewMsg()
	if err := e.From(m.cfg.From); err != nil {
		return fmt.Errorf("email: the sender %q: %w", m.cfg.From, err)
	}
	if err := e.To(to); err != nil {
		return fmt.Errorf("email: %q: %w", to, err)
	}
	subject, _, _ := strings.Cut(text, "\n")
	if r := []rune(subject); len(r) > 70 {
		subject = string(r[:69]) + "…"
	}
	e.SetMessageIDWithValue(messageID("file/" + to + "/" + filename))
	e.Subject("gpucal: " + subject)
	e.SetBodyString(mail.TypeTextPlain, text+"\n")
	if err := e.AttachReader(filename, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("email: attaching %s: %w", filename, err)
	}
	if err := m.deliver(ctx, e); err != nil {
		return fmt.Errorf("email to %s: %w", to, err)
	}
	return nil
}

// deliver hands e to the SMTP server. A refusal for good (5xx: no such
// mailbox, …) is a notify.PermanentError; the rest may pass if tried
// again.
func (m *Mailer) deliver(ctx context.Context, e *mail.Msg) error {
	opts := []mail.Option{mail.WithPort(m.cfg.Port), mail.WithTimeout(30 * time.Second)}
	switch m.cfg.TLS {
	case "tls":
		opts = append(opts, mail.WithSSL())
	case "none":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if m.cfg.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain), mail.WithUsername(m.cfg.Username), mail.WithPassword(m.cfg.Password))
	}
	c, err := mail.NewClient(m.cfg.Host, opts...)
	if err != nil {
		return &notify.PermanentError{Err: err}
	}
	if err := c.DialAndSendWithContext(ctx, e); err != nil {
		var se *mail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 && se.ErrorCode() < 600 {
			return &notify.PermanentError{Err: err}
		}
		return err
	}
	return nil
}
