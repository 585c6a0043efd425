package coretest

import (
	"sync"
	"time"
)

// Epoch is the instant fixtures start from: Monday 7 January 2030, 09:00 UTC.
// It is far enough from today that no test passes by accident of the real clock.
var Epoch = time.Date(2030, time.January, 7, 9, 0, 0, 0, time.UTC)

// Clock is a clock that moves only when told to. Its Now method is a
// core.WithClock function. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock pinned at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the pinned instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set pins the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock by d and returns the new instant.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
