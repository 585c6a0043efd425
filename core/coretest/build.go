package coretest

import (
	"fmt"
	"time"

	"github.com/gpucal/gpucal/core"
)

// DefaultMemoryMiB is the memory of a built GPU unless Memory says otherwise:
// an 80 GB card as NVML reports it.
const DefaultMemoryMiB = 81920

// NodeBuilder builds a core.Node that passes Validate. Start one with Node.
type NodeBuilder struct {
	n core.Node
}

// Node starts a node called name with no GPUs yet:
//
//	coretest.Node("a100-1").GPUs(8, "NVIDIA A100-SXM4-80GB").Build()
//
// IDs are left zero; a Store fills them in when the node is added.
func Node(name string) *NodeBuilder { return &NodeBuilder{n: core.Node{Name: name}} }

// GPUs adds n GPUs of the NVML model name, with the next free indexes,
// UUIDs "GPU-<node>-<index>", DefaultMemoryMiB and state up.
func (b *NodeBuilder) GPUs(n int, name string) *NodeBuilder {
	for range n {
		i := len(b.n.GPUs)
		b.n.GPUs = append(b.n.GPUs, core.GPU{
			Node:      b.n.Name,
			Index:     i,
			Name:      name,
			MemoryMiB: DefaultMemoryMiB,
			UUID:      fmt.Sprintf("GPU-%s-%d", b.n.Name, i),
			State:     core.GPUUp,
		})
	}
	return b
}

// Memory sets the memory of every GPU added so far.
func (b *NodeBuilder) Memory(mib int64) *NodeBuilder {
	for i := range b.n.GPUs {
		b.n.GPUs[i].MemoryMiB = mib
	}
	return b
}

// Down marks the GPUs with these indexes down.
func (b *NodeBuilder) Down(indexes ...int) *NodeBuilder {
	for _, idx := range indexes {
		for i := range b.n.GPUs {
			if b.n.GPUs[i].Index == idx {
				b.n.GPUs[i].State = core.GPUDown
			}
		}
	}
	return b
}

// Build returns the node. Each call returns a fresh copy.
func (b *NodeBuilder) Build() core.Node {
	n := b.n
	n.GPUs = append([]core.GPU(nil), b.n.GPUs...)
	return n
}

// BookingBuilder builds a core.BookRequest that is valid at Epoch. Start one with Booking.
type BookingBuilder struct {
	r core.BookRequest
}

// Booking starts a request for n GPUs of model ("" for any) for one hour
// from Epoch + 1h:
//
//	coretest.Booking(4, "a100").At(coretest.Epoch, 2*time.Hour).Project("vision").Build()
func Booking(n int, model string) *BookingBuilder {
	return &BookingBuilder{r: core.BookRequest{GPUs: n, Model: model, Start: Epoch.Add(time.Hour), End: Epoch.Add(2 * time.Hour)}}
}

// At sets the window to [start, start+d).
func (b *BookingBuilder) At(start time.Time, d time.Duration) *BookingBuilder {
	b.r.Start, b.r.End = start, start.Add(d)
	return b
}

// Window sets the window to [start, end).
func (b *BookingBuilder) Window(start, end time.Time) *BookingBuilder {
	b.r.Start, b.r.End = start, end
	return b
}

// OnNode restricts the booking to one named node.
func (b *BookingBuilder) OnNode(name string) *BookingBuilder { b.r.Node = name; return b }

// SameNode asks for all GPUs on one node.
func (b *BookingBuilder) SameNode() *BookingBuilder { b.r.SameNode = true; return b }

// Project books for a project.
func (b *BookingBuilder) Project(p string) *BookingBuilder { b.r.Project = p; return b }

// For books on behalf of owner.
func (b *BookingBuilder) For(owner string) *BookingBuilder { b.r.Owner = owner; return b }

// Note sets the note.
func (b *BookingBuilder) Note(s string) *BookingBuilder { b.r.Note = s; return b }

// Key sets the idempotency key.
func (b *BookingBuilder) Key(k string) *BookingBuilder { b.r.Key = k; return b }

// Build returns the request.
func (b *BookingBuilder) Build() core.BookRequest { return b.r }

// JobBuilder builds a core.SubmitRequest that is valid for the fixtures
// of NewEnv. Start one with Job.
type JobBuilder struct {
	r core.SubmitRequest
}

// Job starts a request for n GPUs of model ("" for any) running
// "python train.py", guessed to take an hour:
//
//	coretest.Job(4, "a100").Name("llama-ft").Guess(3 * time.Hour).Build()
func Job(n int, model string) *JobBuilder {
	return &JobBuilder{r: core.SubmitRequest{GPUs: n, Model: model, Command: []string{"python", "train.py"},
		Hints: core.Hints{Guess: time.Hour}}}
}

// Name sets the job name.
func (b *JobBuilder) Name(s string) *JobBuilder { b.r.Name = s; return b }

// Type sets the job type.
func (b *JobBuilder) Type(t core.JobType) *JobBuilder { b.r.Type = t; return b }

// Class sets the priority class.
func (b *JobBuilder) Class(c core.JobClass) *JobBuilder { b.r.Class = c; return b }

// Preemptible marks the job preemptible.
func (b *JobBuilder) Preemptible() *JobBuilder { b.r.Preemptible = true; return b }

// In runs the job inside reservation id.
func (b *JobBuilder) In(id int64) *JobBuilder { b.r.Reservation = id; return b }

// Project submits for a project.
func (b *JobBuilder) Project(p string) *JobBuilder { b.r.Project = p; return b }

// Guess sets the submitter's guess of the runtime (0 for none).
func (b *JobBuilder) Guess(d time.Duration) *JobBuilder { b.r.Hints.Guess = d; return b }

// Env sets one environment variable.
func (b *JobBuilder) Env(k, v string) *JobBuilder {
	if b.r.Env == nil {
		b.r.Env = map[string]string{}
	}
	b.r.Env[k] = v
	return b
}

// Command replaces the command.
func (b *JobBuilder) Command(args ...string) *JobBuilder { b.r.Command = args; return b }

// WorkDir sets the working directory.
func (b *JobBuilder) WorkDir(d string) *JobBuilder { b.r.WorkDir = d; return b }

// Hints replaces the estimate hints.
func (b *JobBuilder) Hints(h core.Hints) *JobBuilder { b.r.Hints = h; return b }

// Build returns the request. Each call returns a fresh copy.
func (b *JobBuilder) Build() core.SubmitRequest {
	r := b.r
	r.Command = append([]string(nil), b.r.Command...)
	if b.r.Env != nil {
		r.Env = make(map[string]string, len(b.r.Env))
		for k, v := range b.r.Env {
			r.Env[k] = v
		}
	}
	return r
}
