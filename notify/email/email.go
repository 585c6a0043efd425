// Package email is gpucal's notices by email, over SMTP with
// github.com/wneessen/go-mail: a notify.Channel that mails a person at the
// address their gpucal user has. Each message's Message-ID is derived
// from its delivery's key, so a mail system that keeps Message-IDs drops
// a repeat sent after a crash.
package email

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
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
	sum := sha256.Sum256([]byte(msg.Key))
	id := hex.EncodeToString(sum[:12]) + "@gpucal"
	e.SetMessageIDWithValue(id)
	e.Subject(subject)
	e.SetBodyString(mail.TypeTextPlain, body)
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
		return "", &notify.PermanentError{Err: fmt.Errorf("email: %w", err)}
	}
	if err := c.DialAndSendWithContext(ctx, e); err != nil {
		var se *mail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 && se.ErrorCode() < 600 {
			// 5xx: the server refused for good (no such mailbox, …).
			return "", &notify.PermanentError{Err: fmt.Errorf("email to %s: %w", user, err)}
		}
		return "", fmt.Errorf("email to %s: %w", user, err)
	}
	return "<" + id + ">", nil
}
