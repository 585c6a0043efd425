package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The assigner's tests live inside core because assign, alternatives and
// conflictsWith are unexported. core/coretest cannot be imported here (it
// imports core), so nodes are built by testNode.

const (
	a100Name = "NVIDIA A100-SXM4-80GB"
	h100Name = "NVIDIA H100 80GB HBM3"
)

var t0 = time.Date(2030, time.January, 7, 9, 0, 0, 0, time.UTC)

// testNode returns node number id called name with count GPUs of the NVML
// model nvml; GPU i has ID id*100+i. GPUs listed in down are down.
func testNode(id int64, name string, count int, nvml string, down ...int) Node {
	n := Node{ID: id, Name: name}
	for i := range count {
		st := GPUUp
		for _, d := range down {
			if d == i {
				st = GPUDown
			}
		}
		n.GPUs = append(n.GPUs, GPU{ID: id*100 + int64(i), NodeID: id, Node: name, Index: i, Name: nvml,
			MemoryMiB: 81920, UUID: fmt.Sprintf("GPU-%s-%d", name, i), State: st})
	}
	return n
}

// hold returns the slots of reservation res holding GPU IDs gpus for [start, end).
func hold(res int64, owner string, start, end time.Time, gpus ...int64) []Slot {
	var out []Slot
	for _, g := range gpus {
		out = append(out, Slot{GPUID: g, Reservation: res, Owner: owner, Start: start, End: end})
	}
	return out
}

func join(parts ...[]Slot) []Slot {
	var out []Slot
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func labels(gpus []GPU) []string {
	var out []string
	for _, g := range gpus {
		out = append(out, g.Label())
	}
	return out
}

func TestAssign(t *testing.T) {
	start, end := t0.Add(time.Hour), t0.Add(3*time.Hour)
	win := func(count int) demand { return demand{count: count, start: start, end: end} }
	tests := []struct {
		name  string
		nodes []Node
		slots []Slot
		d     demand
		want  []string // GPU labels, in order; nil: cannot be met
	}{
		{
			name:  "same node preferred",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name)},
			d:     win(3),
			want:  []string{"n1/0", "n1/1", "n1/2"},
		},
		{
			name:  "best fit picks the node left with fewest free",
			nodes: []Node{testNode(1, "n1", 8, a100Name), testNode(2, "n2", 4, a100Name), testNode(3, "n3", 8, a100Name)},
			slots: hold(9, "x", t0, end, 300, 301, 302, 303, 304),
			d:     win(3),
			want:  []string{"n3/5", "n3/6", "n3/7"},
		},
		{
			name:  "best fit skips nodes too small",
			nodes: []Node{testNode(1, "n1", 8, a100Name), testNode(2, "n2", 4, a100Name), testNode(3, "n3", 8, a100Name)},
			slots: hold(9, "x", t0, end, 300, 301, 302, 303, 304),
			d:     win(4),
			want:  []string{"n2/0", "n2/1", "n2/2", "n2/3"},
		},
		{
			name:  "time adjacency wins a tie between nodes",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name)},
			slots: join(hold(7, "x", t0, start, 202), hold(8, "y", end, end.Add(time.Hour), 203)),
			d:     win(2),
			want:  []string{"n2/2", "n2/3"},
		},
		{
			name:  "time adjacency orders GPUs inside a node",
			nodes: []Node{testNode(1, "n1", 4, a100Name)},
			slots: join(hold(7, "x", t0, start, 103), hold(8, "y", end, end.Add(time.Hour), 103, 101)),
			d:     win(2),
			want:  []string{"n1/3", "n1/1"},
		},
		{
			name:  "fit beats adjacency",
			nodes: []Node{testNode(1, "n1", 8, a100Name), testNode(2, "n2", 2, a100Name)},
			slots: hold(7, "x", t0, start, 100, 101),
			d:     win(2),
			want:  []string{"n2/0", "n2/1"},
		},
		{
			name: "multi-node uses as few nodes as possible",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name), testNode(3, "n3", 2, a100Name),
				testNode(4, "n4", 8, a100Name)},
			slots: hold(9, "x", t0, end, 400, 401, 402, 403, 404),
			d:     win(6),
			want:  []string{"n1/0", "n1/1", "n1/2", "n1/3", "n3/0", "n3/1"},
		},
		{
			name: "multi-node takes the largest nodes whole",
			nodes: []Node{testNode(1, "n1", 2, a100Name), testNode(2, "n2", 4, a100Name), testNode(3, "n3", 2, a100Name),
				testNode(4, "n4", 3, a100Name)},
			d:    win(9),
			want: []string{"n2/0", "n2/1", "n2/2", "n2/3", "n4/0", "n4/1", "n4/2", "n1/0", "n1/1"},
		},
		{
			name:  "multi-node when every node is partly busy",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name)},
			slots: hold(9, "x", start, end, 100, 201),
			d:     win(5),
			want:  []string{"n1/1", "n1/2", "n1/3", "n2/0", "n2/2"},
		},
		{
			name:  "same node refuses to split",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name)},
			d:     demand{count: 5, sameNode: true, start: start, end: end},
		},
		{
			name:  "same node fits",
			nodes: []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 8, a100Name)},
			d:     demand{count: 5, sameNode: true, start: start, end: end},
			want:  []string{"n2/0", "n2/1", "n2/2", "n2/3", "n2/4"},
		},
		{
			name:  "node filter",
			nodes: []Node{testNode(1, "n1", 8, a100Name), testNode(2, "n2", 2, a100Name)},
			d:     demand{count: 2, node: "n1", start: start, end: end},
			want:  []string{"n1/0", "n1/1"},
		},
		{
			name:  "node filter too small",
			nodes: []Node{testNode(1, "n1", 8, a100Name), testNode(2, "n2", 2, a100Name)},
			d:     demand{count: 3, node: "n2", start: start, end: end},
		},
		{
			name:  "model filter",
			nodes: []Node{testNode(1, "a", 2, a100Name), testNode(2, "h", 4, h100Name)},
			d:     demand{count: 2, model: Model{Family: "h100"}, start: start, end: end},
			want:  []string{"h/0", "h/1"},
		},
		{
			name:  "exact model refuses other sizes",
			nodes: []Node{testNode(1, "a", 2, a100Name), testNode(2, "b", 4, "NVIDIA A100-PCIE-40GB")},
			d:     demand{count: 3, model: Model{Family: "a100", Memory: "80gb"}, start: start, end: end},
		},
		{
			name:  "down GPUs are never assigned",
			nodes: []Node{testNode(1, "n1", 4, a100Name, 0, 2)},
			d:     win(2),
			want:  []string{"n1/1", "n1/3"},
		},
		{
			name:  "down GPUs do not count",
			nodes: []Node{testNode(1, "n1", 4, a100Name, 0)},
			d:     win(4),
		},
		{
			name:  "back to back is free",
			nodes: []Node{testNode(1, "n1", 2, a100Name)},
			slots: join(hold(1, "x", t0, start, 100, 101), hold(2, "y", end, end.Add(time.Hour), 100, 101)),
			d:     win(2),
			want:  []string{"n1/0", "n1/1"},
		},
		{
			name:  "one second of overlap is not",
			nodes: []Node{testNode(1, "n1", 2, a100Name)},
			slots: hold(1, "x", t0, start.Add(time.Second), 100),
			d:     win(2),
		},
		{
			name:  "a slot inside the window blocks",
			nodes: []Node{testNode(1, "n1", 2, a100Name)},
			slots: hold(1, "x", start.Add(time.Minute), start.Add(2*time.Minute), 101),
			d:     win(2),
		},
		{
			name:  "no nodes",
			d:     win(1),
			want:  nil,
			nodes: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodesBefore := cloneNodes(tt.nodes)
			slotsBefore := append([]Slot(nil), tt.slots...)
			got := labels(assign(tt.nodes, tt.slots, tt.d))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("assign mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(nodesBefore, tt.nodes); diff != "" {
				t.Errorf("assign changed its nodes (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(slotsBefore, tt.slots); diff != "" {
				t.Errorf("assign changed its slots (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAssignOrderIndependent checks that the order nodes and slots arrive
// in (a database's whim) does not change the answer.
func TestAssignOrderIndependent(t *testing.T) {
	start, end := t0.Add(time.Hour), t0.Add(3*time.Hour)
	nodes := []Node{testNode(1, "n1", 4, a100Name), testNode(2, "n2", 4, a100Name), testNode(3, "n3", 4, a100Name)}
	slots := join(hold(1, "x", t0, end, 100), hold(2, "y", t0, end, 200), hold(3, "z", end, end.Add(time.Hour), 201, 202))
	d := demand{count: 3, start: start, end: end}
	want := labels(assign(nodes, slots, d))
	reversed := []Node{nodes[2], nodes[1], nodes[0]}
	revSlots := append([]Slot(nil), slots...)
	for i, j := 0, len(revSlots)-1; i < j; i, j = i+1, j-1 {
		revSlots[i], revSlots[j] = revSlots[j], revSlots[i]
	}
	if diff := cmp.Diff(want, labels(assign(reversed, revSlots, d))); diff != "" {
		t.Errorf("assign depends on input order (-forward +reversed):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"n2/1", "n2/2", "n2/3"}, want); diff != "" {
		t.Errorf("assign mismatch (-want +got):\n%s", diff)
	}
}

func cloneNodes(nodes []Node) []Node {
	if nodes == nil {
		return nil
	}
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		n.GPUs = append([]GPU(nil), n.GPUs...)
		out[i] = n
	}
	return out
}

func TestAlternatives(t *testing.T) {
	start, end := t0.Add(time.Hour), t0.Add(3*time.Hour)
	horizon := t0.Add(DefaultPolicy.Horizon)
	a100 := Model{Family: "a100"}
	mixed := []Node{testNode(1, "a", 4, a100Name), testNode(2, "h", 4, h100Name)}
	tests := []struct {
		name       string
		nodes      []Node
		slots      []Slot
		d          demand
		horizonEnd time.Time
		want       []Alternative
	}{
		{
			name:  "later at the blocker's end and another model now",
			nodes: mixed,
			slots: hold(1, "x", t0, t0.Add(2*time.Hour), 100, 101, 102, 103),
			d:     demand{count: 4, model: a100, start: start, end: end}, horizonEnd: horizon,
			want: []Alternative{
				{Kind: "later", GPUs: 4, Model: "a100", Start: t0.Add(2 * time.Hour), End: t0.Add(4 * time.Hour)},
				{Kind: "model", GPUs: 4, Model: "h100", Start: start, End: end},
			},
		},
		{
			name:  "fewer GPUs now",
			nodes: mixed,
			slots: join(hold(1, "x", t0, t0.Add(2*time.Hour), 100, 101), hold(2, "y", t0, end, 200)),
			d:     demand{count: 4, model: a100, start: start, end: end}, horizonEnd: horizon,
			want: []Alternative{
				{Kind: "later", GPUs: 4, Model: "a100", Start: t0.Add(2 * time.Hour), End: t0.Add(4 * time.Hour)},
				{Kind: "fewer", GPUs: 2, Model: "a100", Start: start, End: end},
			},
		},
		{
			name:  "earliest window where all fit, not the first end",
			nodes: []Node{testNode(1, "a", 4, a100Name)},
			slots: join(hold(1, "x", t0, t0.Add(2*time.Hour), 100, 101), hold(2, "y", t0, t0.Add(5*time.Hour), 102, 103)),
			d:     demand{count: 4, start: start, end: end}, horizonEnd: horizon,
			want: []Alternative{
				{Kind: "later", GPUs: 4, Start: t0.Add(5 * time.Hour), End: t0.Add(7 * time.Hour)},
			},
		},
		{
			name:  "a later start needs the whole window free",
			nodes: []Node{testNode(1, "a", 2, a100Name)},
			slots: join(hold(1, "x", t0, t0.Add(2*time.Hour), 100, 101), hold(2, "y", t0.Add(3*time.Hour), t0.Add(4*time.Hour), 100),
				hold(3, "z", t0.Add(5*time.Hour), t0.Add(6*time.Hour), 101)),
			d:          demand{count: 2, start: start, end: end},
			horizonEnd: horizon,
			want:       []Alternative{{Kind: "later", GPUs: 2, Start: t0.Add(6 * time.Hour), End: t0.Add(8 * time.Hour)}},
		},
		{
			name:       "nothing within the horizon",
			nodes:      []Node{testNode(1, "a", 2, a100Name)},
			slots:      hold(1, "x", t0, t0.Add(10*time.Hour), 100, 101),
			d:          demand{count: 2, start: start, end: end},
			horizonEnd: t0.Add(5 * time.Hour),
			want:       nil,
		},
		{
			name:       "a later window must end within the horizon",
			nodes:      []Node{testNode(1, "a", 2, a100Name)},
			slots:      hold(1, "x", t0, t0.Add(4*time.Hour), 100, 101),
			d:          demand{count: 2, start: start, end: end},
			horizonEnd: t0.Add(5 * time.Hour),
			want:       nil,
		},
		{
			name:  "same node keeps to one node",
			nodes: []Node{testNode(1, "a", 2, a100Name), testNode(2, "b", 2, a100Name)},
			slots: join(hold(1, "x", t0, t0.Add(2*time.Hour), 100), hold(2, "y", t0, t0.Add(6*time.Hour), 200)),
			d:     demand{count: 2, sameNode: true, start: start, end: end}, horizonEnd: horizon,
			want: []Alternative{
				{Kind: "later", GPUs: 2, Start: t0.Add(2 * time.Hour), End: t0.Add(4 * time.Hour)},
				{Kind: "fewer", GPUs: 1, Start: start, End: end},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := alternatives(tt.nodes, tt.slots, tt.d, tt.horizonEnd)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("alternatives mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConflictsWith(t *testing.T) {
	start, end := t0.Add(time.Hour), t0.Add(3*time.Hour)
	nodes := []Node{testNode(1, "a", 4, a100Name), testNode(2, "h", 4, h100Name), testNode(3, "b", 2, a100Name)}
	slots := join(
		hold(3, "carol", start.Add(time.Hour), end, 102),
		hold(2, "bob", t0, start.Add(time.Minute), 101),
		hold(1, "alice", t0, end, 100, 103),              // two GPUs, named once
		hold(4, "dave", t0, end, 200),                    // an h100: not in the way of an a100 request
		hold(5, "erin", end, end.Add(time.Hour), 300),    // touches, does not overlap
		hold(6, "frank", t0, start, 301),                 // ends as the window starts
		hold(7, "grace", start.Add(time.Hour), end, 301), // on node b
	)
	ref := func(id int64, owner string, s, e time.Time) ReservationRef {
		return ReservationRef{ID: ReservationName(id), Owner: owner, Start: s, End: e}
	}
	a100 := Model{Family: "a100"}
	tests := []struct {
		name  string
		d     demand
		limit int
		want  []ReservationRef
	}{
		{
			name: "earliest first, then by ID", d: demand{count: 4, model: a100, start: start, end: end}, limit: 10,
			want: []ReservationRef{ref(1, "alice", t0, end), ref(2, "bob", t0, start.Add(time.Minute)),
				ref(3, "carol", start.Add(time.Hour), end), ref(7, "grace", start.Add(time.Hour), end)},
		},
		{
			name: "limit", d: demand{count: 4, model: a100, start: start, end: end}, limit: 2,
			want: []ReservationRef{ref(1, "alice", t0, end), ref(2, "bob", t0, start.Add(time.Minute))},
		},
		{
			name: "node filter", d: demand{count: 2, node: "b", start: start, end: end}, limit: 10,
			want: []ReservationRef{ref(7, "grace", start.Add(time.Hour), end)},
		},
		{
			name: "other model", d: demand{count: 4, model: Model{Family: "h100"}, start: start, end: end}, limit: 10,
			want: []ReservationRef{ref(4, "dave", t0, end)},
		},
		{
			name: "nothing in the way", d: demand{count: 1, start: end, end: end.Add(30 * time.Minute)}, limit: 10,
			want: []ReservationRef{ref(5, "erin", end, end.Add(time.Hour))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conflictsWith(nodes, slots, tt.d, tt.limit)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conflictsWith mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
