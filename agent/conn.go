package agent

import (
	"context"
	"errors"
	"strconv"

	"github.com/gpucal/gpucal/core"
)

// Conn is the agent's link to the server; the web package's client
// implements it over HTTP. The agent calls it from two goroutines (the
// heartbeat loop and the log shipper), so it must be safe for concurrent
// use.
type Conn interface {
	// Heartbeat sends the node's state and returns the state the server
	// wants it in.
	Heartbeat(ctx context.Context, hb core.Heartbeat) (core.DesiredState, error)
	// AppendLog appends data to job's log on the server at offset, the
	// number of bytes the agent believes the server has, and returns the
	// server's size after the append. When offset is not the server's
	// size it appends nothing and returns a *LogOffsetError with that
	// size; the agent resumes from there.
	AppendLog(ctx context.Context, job int64, offset int64, data []byte) (size int64, err error)
}

// LogOffsetError is AppendLog's answer when the agent's offset is not the
// size of the log the server has: after an agent restart that lost track,
// or a retried append whose first try did arrive.
type LogOffsetError struct {
	Size int64 // the bytes of the log the server has
}

func (e *LogOffsetError) Error() string {
	return "the server has " + strconv.FormatInt(e.Size, 10) + " bytes of the job's log; append from there"
}

// LogSize reports the server's size of a log when err is (or wraps) a
// *LogOffsetError.
func LogSize(err error) (size int64, ok bool) {
	var e *LogOffsetError
	if errors.As(err, &e) {
		return e.Size, true
	}
	return 0, false
}
