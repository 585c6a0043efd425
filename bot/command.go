package bot

import (
	"time"
)

// Kind says what a command asks for.
type Kind string

// The commands /gpu understands.
const (
	KindBook     Kind = "book"     // reserve GPUs for a window
	KindWhen     Kind = "when"     // what-if: when could N GPUs run for a while
	KindQueue    Kind = "queue"    // the queue with predicted starts
	KindMine     Kind = "mine"     // my bookings and jobs
	KindStatus   Kind = "status"   // the cluster at a glance
	KindCalendar Kind = "calendar" // the next bookings and planned jobs
	KindCancel   Kind = "cancel"   // cancel a reservation or a job
	KindExtend   Kind = "extend"   // extend a reservation
	KindRelease  Kind = "release"  // give the rest of an active reservation back
	KindTZ       Kind = "tz"       // set my time zone
	KindNotify   Kind = "notify"   // what I am told, when and where
	KindHelp     Kind = "help"     // what /gpu can do
	KindWeb      Kind = "web"      // a sign-in link to the web calendar
)

// Command is one parsed /gpu command. Times are absolute instants (UTC);
// fields a kind does not use are zero.
type Command struct {
	Kind Kind `json:"kind"`

	// What to book or ask about.
	GPUs  int    `json:"gpus,omitempty"`  // 0: not said (book and when default to 1)
	Model string `json:"model,omitempty"` // normalised ("a100", "h100", "a100-80gb"); "" for any

	// When. A booking has Start and End, or Start and Duration (End is then
	// Start + Duration), or ASAP with a Duration. "when" has a Duration.
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Duration Duration  `json:"duration,omitempty"`
	ASAP     bool      `json:"asap,omitempty"` // "asap", "now", "尽快", "现在"

	Note    string `json:"note,omitempty"`    // "for llama finetune", "备注 …"
	Project string `json:"project,omitempty"` // "project nlp", "项目 nlp"

	// ID names the reservation or job a command acts on ("r42", "j7").
	ID string `json:"id,omitempty"`
	// By is how long "extend" adds.
	By Duration `json:"by,omitempty"`
	// Zone is the IANA zone "tz" sets ("Europe/Berlin", "Asia/Shanghai").
	Zone string `json:"zone,omitempty"`
	// Notify is what "notify" changes; nil shows the settings.
	Notify *NotifyChange `json:"notify,omitempty"`

	// Relative says the input named its times relative to now ("tomorrow",
	// "tonight", "下周一"); replies echo the absolute date and time.
	Relative bool `json:"relative,omitempty"`
	// Ambiguous, when set, says what the parser had to guess ("9-1 read as
	// 09:00–13:00"); a booking is then confirmed by the user before it is made.
	Ambiguous string `json:"ambiguous,omitempty"`
	// Lang is the language the command was written in, "en" or "zh"; replies use it.
	Lang string `json:"lang"`
}

// Duration is a time.Duration that reads and writes as "3h0m0s" in JSON.
type Duration time.Duration

// MarshalText writes d as time.Duration's String.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what MarshalText writes.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}
