package web

import (
	"sync"
	"time"
)

// Change is what the server tells browsers when something they show
// changed: a booking, a job's state, a node, or the plan. Browsers fetch
// the calendar again; Change carries no data of its own, so nobody learns
// anything from it that the calendar would not show them.
type Change struct {
	ID   int64     `json:"id"`   // counts up from 1 while the server runs
	Kind string    `json:"kind"` // "change" (bookings, jobs, nodes) or "plan" (a replan moved predictions)
	At   time.Time `json:"at"`
}

// Broker fans changes out to the browsers listening on /api/v1/stream.
// Publish never blocks: a listener that is not keeping up loses changes,
// which is harmless, since each one only says "fetch again" and the
// listener still gets the next.
type Broker struct {
	mu   sync.Mutex
	last int64
	subs map[chan Change]struct{}
}

// NewBroker returns a broker with no listeners.
func NewBroker() *Broker { return &Broker{subs: map[chan Change]struct{}{}} }

// Publish tells every listener that something of kind changed.
func (b *Broker) Publish(kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last++
	c := Change{ID: b.last, Kind: kind, At: time.Now().UTC()}
	for ch := range b.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

// Subscribe returns a channel of changes and a function that ends the
// subscription; the channel is never closed, so a reader selects on its
// own context too.
func (b *Broker) Subscribe() (<-chan Change, func()) {
	ch := make(chan Change, 8)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

// Listeners returns how many browsers are listening.
func (b *Broker) Listeners() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
