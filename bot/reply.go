package bot

import (
	"strings"
)

// Reply is what gpucal answers in chat, before any platform's formatting:
// a headline, optional lines (a list) and fields, and buttons. Adapters
// render it as Block Kit, Discord components, or plain text.
type Reply struct {
	Text    string   // one or two sentences; always set
	Lines   []string // list entries, one per line (queue rows, bookings)
	Fields  []Field  // label–value pairs (reservation, GPUs, window)
	Buttons []Button
	// Code is preformatted text shown as is, in a monospaced block (the
	// last lines of a failed job's log).
	Code string
	// Error says the command changed nothing; Text says why and how to
	// phrase it instead.
	Error bool
	Lang  string // "en" or "zh", the language Text is in
}

// Field is one labelled value in a reply.
type Field struct {
	Label string
	Value string
}

// Button is an action offered with a reply. Pressing it runs Command as
// the person who pressed it (never as the one the reply was for: the
// service checks who may do what), so a button carries no authority.
type Button struct {
	Label   string
	Style   string // "primary", "danger", or "" for the default
	Command Command
}

// Button styles.
const (
	StylePrimary = "primary"
	StyleDanger  = "danger"
)

// String renders r as plain text: the headline, the fields, the lines, the
// code and the buttons' labels in brackets.
func (r Reply) String() string {
	var b strings.Builder
	b.WriteString(r.Text)
	for _, f := range r.Fields {
		b.WriteString("\n" + f.Label + ": " + f.Value)
	}
	for _, l := range r.Lines {
		b.WriteString("\n" + l)
	}
	if r.Code != "" {
		b.WriteString("\n" + r.Code)
	}
	if len(r.Buttons) > 0 {
		b.WriteString("\n")
		for i, bt := range r.Buttons {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString("[" + bt.Label + "]")
		}
	}
	return b.String()
}

// CodeWithin returns r.Code for a fenced block of at most n bytes: its
// first lines go until the rest fits (the end of a log matters most), and
// backticks become look-alikes so that no fence closes early.
func (r Reply) CodeWithin(n int) string {
	code := strings.ReplaceAll(r.Code, "`", "ˋ")
	for len(code) > n {
		i := strings.IndexByte(code, '\n')
		if i < 0 {
			cut := len(code) - n
			for cut < len(code) && code[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
				cut++
			}
			return code[cut:]
		}
		code = code[i+1:]
	}
	return code
}
