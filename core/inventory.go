package core

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Node is one machine with GPUs.
type Node struct {
	ID        int64
	Name      string
	GPUs      []GPU // ordered by Index
	CreatedAt time.Time

	// What its agent last said, for a node that joined with one (an
	// admin may also add a node by hand: State is then NodeUnmanaged).
	State    NodeState
	LastSeen time.Time // the last heartbeat; zero before the first
	Agent    string    // the agent's version
	NVML     string    // "" while its GPUs read fine, else why they do not
}

// NodeState is whether a node's agent is heard from.
type NodeState string

const (
	NodeUnmanaged NodeState = ""        // added by hand, no agent: always schedulable, jobs are not launched
	NodeReady     NodeState = "ready"   // heartbeats arrive
	NodeSuspect   NodeState = "suspect" // some heartbeats missed: no new jobs start there
	NodeDown      NodeState = "down"    // silent too long: its jobs failed, nothing is planned there
)

// Managed reports whether an agent runs the node's jobs.
func (n Node) Managed() bool { return n.State != NodeUnmanaged }

// GPUState is the administrative state of a GPU. Only GPUs that are up can
// be booked; a down GPU keeps its past reservations.
type GPUState string

const (
	GPUUp   GPUState = "up"
	GPUDown GPUState = "down"
)

// GPU is one device on a node.
type GPU struct {
	ID        int64
	NodeID    int64
	Node      string // the node's name
	Index     int    // the device index on its node (nvidia-smi's)
	Name      string // as NVML reports it: "NVIDIA A100-SXM4-80GB"
	MemoryMiB int64
	UUID      string
	State     GPUState
	// Fault, when not "", takes the GPU out of service until an admin
	// clears it: a critical XID error, a process that outlived a drain.
	Fault     string
	Telemetry Telemetry // the agent's latest reading; zero without an agent
}

// Telemetry is a GPU's latest reading.
type Telemetry struct {
	At      time.Time // when the heartbeat carrying it arrived; zero: never
	Util    float64   // percent
	UsedMiB int64
	TempC   float64
	PowerW  float64
	// What the agent last reported about faults: the critical XID it last
	// named (0 for none) and the fault it found itself ("" for none). Only
	// a change takes the GPU out of service, so a fault an admin cleared
	// stays cleared while the agent repeats it.
	XID        uint64
	AgentFault string
	// IdleSince is since when every heartbeat showed the GPU under
	// IdleUtil percent busy; zero while it is busy.
	IdleSince time.Time
}

// IdleUtil is the utilisation (percent) under which a GPU counts as idle.
const IdleUtil = 5.0

// Schedulable reports whether new work may be placed on g.
func (g GPU) Schedulable() bool { return g.State == GPUUp && g.Fault == "" }

// Model returns the GPU's normalised model.
func (g GPU) Model() Model { return GPUModel(g.Name, g.MemoryMiB) }

// Label returns "node/index", the way people name a GPU.
func (g GPU) Label() string { return fmt.Sprintf("%s/%d", g.Node, g.Index) }

// GPURef names a GPU inside a reservation or a calendar.
type GPURef struct {
	ID    int64  `json:"id"`
	Node  string `json:"node"`
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Model string `json:"model"`
}

// Ref returns the reference to g.
func (g GPU) Ref() GPURef {
	return GPURef{ID: g.ID, Node: g.Node, Index: g.Index, UUID: g.UUID, Model: g.Model().String()}
}

var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// maxGPUsPerNode bounds a node's size; the largest machines today hold 16.
const maxGPUsPerNode = 64

// Validate checks a node as an admin describes it: a DNS-style name, at
// least one GPU, unique indexes and UUIDs, and a recognisable model per GPU.
func (n *Node) Validate() error {
	if !nodeName.MatchString(n.Name) {
		return Errorf(CodeInvalid, "node name %q must be lower-case letters, digits, '-' or '.', at most 63 characters", n.Name)
	}
	if len(n.GPUs) == 0 || len(n.GPUs) > maxGPUsPerNode {
		return Errorf(CodeInvalid, "node %s must have between 1 and %d GPUs, got %d", n.Name, maxGPUsPerNode, len(n.GPUs))
	}
	seenIndex := map[int]bool{}
	seenUUID := map[string]bool{}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		g.Node = n.Name
		g.Name = strings.TrimSpace(g.Name)
		g.UUID = strings.TrimSpace(g.UUID)
		if g.State == "" {
			g.State = GPUUp
		}
		switch {
		case g.Index < 0 || g.Index >= maxGPUsPerNode:
			return Errorf(CodeInvalid, "GPU index %d on %s is out of range 0..%d", g.Index, n.Name, maxGPUsPerNode-1)
		case seenIndex[g.Index]:
			return Errorf(CodeInvalid, "GPU index %d appears twice on %s", g.Index, n.Name)
		case g.Name == "" || len(g.Name) > 100:
			return Errorf(CodeInvalid, "GPU %s/%d needs a model name (at most 100 characters), like \"NVIDIA A100-SXM4-80GB\"", n.Name, g.Index)
		case g.MemoryMiB < 0 || g.MemoryMiB > 1<<22:
			return Errorf(CodeInvalid, "GPU %s/%d memory %d MiB is out of range", n.Name, g.Index, g.MemoryMiB)
		case g.UUID == "" || len(g.UUID) > 100:
			return Errorf(CodeInvalid, "GPU %s/%d needs a UUID (at most 100 characters), like \"GPU-5e1f…\"", n.Name, g.Index)
		case seenUUID[g.UUID]:
			return Errorf(CodeInvalid, "GPU UUID %s appears twice on %s", g.UUID, n.Name)
		case g.State != GPUUp && g.State != GPUDown:
			return Errorf(CodeInvalid, "GPU %s/%d state must be %q or %q", n.Name, g.Index, GPUUp, GPUDown)
		}
		if _, ok := ParseModel(g.Name); !ok {
			return Errorf(CodeInvalid, "GPU %s/%d model %q is not a GPU model gpucal recognises", n.Name, g.Index, g.Name)
		}
		seenIndex[g.Index] = true
		seenUUID[g.UUID] = true
	}
	return nil
}

// CheckStates refuses node and GPU states that do not exist: what the
// database's CHECK constraints refuse, answered as CodeInvalid. A new GPU
// (ID 0) without a state is up.
func (n Node) CheckStates() error {
	switch n.State {
	case NodeUnmanaged, NodeReady, NodeSuspect, NodeDown:
	default:
		return Errorf(CodeInvalid, "node %s: unknown state %q", n.Name, n.State)
	}
	for _, g := range n.GPUs {
		if g.State == "" && g.ID == 0 {
			continue
		}
		if g.State != GPUUp && g.State != GPUDown {
			return Errorf(CodeInvalid, "GPU %s/%d: unknown state %q", n.Name, g.Index, g.State)
		}
	}
	return nil
}

// allGPUs flattens the GPUs of nodes, in node then index order.
func allGPUs(nodes []Node) []GPU {
	var gpus []GPU
	for _, n := range nodes {
		gpus = append(gpus, n.GPUs...)
	}
	return gpus
}
