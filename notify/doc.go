// Package notify delivers gpucal's outbox: events written in the same
// transaction as the change that caused them (core.Event) are fanned out
// into deliveries, one per recipient and channel, and sent at least once,
// with exponential backoff and jitter, the provider's Retry-After honoured,
// a pace per recipient, and dead letters after the last attempt (the
// admins are told). A delivery that was being sent when its sender died is
// checked with the provider before it is sent again, so a restart neither
// loses nor repeats a message.
//
// Channels (Slack, Discord, …) are small adapters that cmd/gpucal builds
// from the chat apps; notify imports core only. One server replica at a
// time runs the Dispatcher.
package notify
