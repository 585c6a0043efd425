package main

import (
	"net"
	"net/textproto"
	"strings"
	"sync"
)

// mailCounter is a small SMTP server on loopback for the load test: the
// replicas send their notices by email to it, and it counts each
// Message-ID (gpucal derives it from the delivery's key), so that a
// notice sent twice shows as a Message-ID seen twice.
type mailCounter struct {
	ln  net.Listener
	mu  sync.Mutex
	ids map[string]int
	wg  sync.WaitGroup
}

func newMailCounter() (*mailCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &mailCounter{ln: ln, ids: map[string]int{}}
	m.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.wg.Go(func() { m.serve(c) })
		}
	})
	return m, nil
}

// url is the GPUCAL_SMTP_URL that reaches it.
func (m *mailCounter) url() string {
	return "smtp://" + m.ln.Addr().String() + "?from=gpucal@loadtest.example.org&tls=none"
}

func (m *mailCounter) close() {
	m.ln.Close()
	m.wg.Wait()
}

// counts returns how many mails came and how many Message-IDs came more
// than once.
func (m *mailCounter) counts() (mails, twice int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.ids {
		mails += n
		if n > 1 {
			twice++
		}
	}
	return mails, twice
}

func (m *mailCounter) serve(c net.Conn) {
	defer c.Close()
	tp := textproto.NewConn(c)
	say := func(code int, msg string) { tp.PrintfLine("%d %s", code, msg) }
	say(220, "loadtest ESMTP")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			tp.PrintfLine("250-loadtest")
			say(250, "8BITMIME")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RCPT"), cmd == "NOOP", cmd == "RSET":
			say(250, "OK")
		case cmd == "DATA":
			say(354, "go ahead")
			body, err := tp.ReadDotLines()
			if err != nil {
				return
			}
			id := ""
			for _, l := range body {
				if v, ok := strings.CutPrefix(l, "Message-ID: "); ok {
					id = v
					break
				}
			}
			m.mu.Lock()
			m.ids[id]++
			m.mu.Unlock()
			say(250, "queued")
		case cmd == "QUIT":
			say(221, "bye")
			return
		default:
			say(502, "command not recognized")
		}
	}
}
