package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Heartbeat records what node's agent reports and returns what the node
// should be doing, in one transaction (DESIGN §3, decision 4):
//
//   - the node is ready again, its GPUs' readings are kept, and a GPU with
//     a critical XID or a fault the agent found is taken out of service
//     (admins are told);
//   - each job's part on the node moves its job along: starting → running,
//     → draining once its stop began, and, once every part has ended, to
//     succeeded, failed, preempted or cancelled, with its owner told;
//   - the answer lists the jobs to run here, the jobs to stop with their
//     ladders, the reservation windows to keep free, and the ended parts
//     now recorded (Ack);
//   - a drain's owner is warned when its signal time comes, and the holder
//     of a reservation is told of processes gpucal did not start on its
//     GPUs (and so is their owner).
//
// node is the node the credential belongs to: a heartbeat for another is
// refused.
func (s *Service) Heartbeat(ctx context.Context, node string, hb Heartbeat) (DesiredState, error) {
	if err := hb.Check(node); err != nil {
		return DesiredState{}, err
	}
	key, err := s.jobTokenKey(ctx)
	if err != nil {
		return DesiredState{}, err
	}
	now := s.Now()
	var out DesiredState
	err = s.store.Update(ctx, func(tx Tx) error {
		n, err := lockedNode(ctx, tx, node)
		if err != nil {
			return err
		}
		hbx := heartbeatTx{s: s, tx: tx, node: n, hb: hb, now: now, key: key}
		if err := hbx.updateNode(ctx); err != nil {
			return err
		}
		if err := hbx.applyReports(ctx); err != nil {
			return err
		}
		if out, err = hbx.desired(ctx); err != nil {
			return err
		}
		return tx.InsertEvents(ctx, hbx.events)
	})
	return out, err
}

// heartbeatTx is one heartbeat being recorded.
type heartbeatTx struct {
	s      *Service
	tx     Tx
	node   Node
	hb     Heartbeat
	now    time.Time
	key    []byte // signs job tokens
	events []Event
	// reported: the jobs the agent listed, by ID.
	reported map[int64]JobReport
	// slots: the windows on this node's GPUs from now to WindowsAhead.
	slots []Slot
}

func (h *heartbeatTx) audit(ctx context.Context, action, object, detail string) error {
	return h.tx.Audit(ctx, AuditEntry{At: h.now, Actor: "node/" + h.node.Name, Action: action, Object: object, Detail: detail})
}

// updateNode records the node's state and its GPUs' readings and faults.
func (h *heartbeatTx) updateNode(ctx context.Context) error {
	n := &h.node
	was := n.State
	n.State, n.LastSeen, n.Agent, n.NVML = NodeReady, h.now, h.hb.Agent, h.hb.NVML
	if was != NodeReady {
		if err := h.audit(ctx, "node.ready", "node/"+n.Name, fmt.Sprintf("%s → ready", cmp.Or(string(was), "unmanaged"))); err != nil {
			return err
		}
		if was == NodeDown {
			h.events = append(h.events, Event{Kind: EventNodeBack, User: Admins, At: h.now,
				Detail:   fmt.Sprintf("Node %s is back: its agent answers again.", n.Name),
				Data:     map[string]string{DataNode: n.Name},
				DedupKey: fmt.Sprintf("node_back:%s:%d", n.Name, h.now.Unix())})
		}
	}
	reports := map[string]GPUReport{}
	for _, g := range h.hb.GPUs {
		reports[g.UUID] = g
	}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		r, ok := reports[g.UUID]
		if !ok {
			// An agent that reads its GPUs but no longer lists this one
			// has lost it (fallen off the bus): nothing more goes there.
			if h.hb.NVML == "" && len(h.hb.GPUs) > 0 && g.Fault == "" {
				if err := h.fault(ctx, g, "its agent no longer finds it"); err != nil {
					return err
				}
			}
			continue
		}
		before := g.Telemetry
		g.Telemetry = Telemetry{At: h.now, Util: r.Util, UsedMiB: r.UsedMiB, TempC: r.TempC, PowerW: r.PowerW, XID: r.XID, AgentFault: r.Fault}
		if r.Util < IdleUtil {
			g.Telemetry.IdleSince = cmp.Or(before.IdleSince, h.now)
		}
		fault := ""
		switch {
		case r.XID != 0 && r.XID != before.XID:
			fault = fmt.Sprintf("critical XID %d", r.XID)
		case r.Fault != "" && r.Fault != before.AgentFault:
			fault = r.Fault
		}
		if fault == "" || g.Fault != "" {
			continue
		}
		if err := h.fault(ctx, g, fault); err != nil {
			return err
		}
	}
	return h.tx.UpdateNode(ctx, n)
}

// fault takes g out of service and tells the admins.
func (h *heartbeatTx) fault(ctx context.Context, g *GPU, fault string) error {
	g.Fault = fault
	h.events = append(h.events, Event{Kind: EventGPUFault, User: Admins, At: h.now,
		Detail: fmt.Sprintf("GPU %s (%s) is out of service: %s. Nothing new is placed on it until an admin runs `gpucal node clear-fault %s`.",
			g.Label(), g.UUID, fault, g.Label()),
		Data:     map[string]string{DataGPU: g.Label(), DataFault: fault},
		DedupKey: fmt.Sprintf("gpu_fault:%s:%s:%d", g.UUID, fault, h.now.Unix())})
	return h.audit(ctx, "gpu.fault", "gpu/"+g.Label(), fault)
}

// applyReports moves each reported job along.
func (h *heartbeatTx) applyReports(ctx context.Context) error {
	h.reported = make(map[int64]JobReport, len(h.hb.Jobs))
	for _, r := range h.hb.Jobs {
		h.reported[r.Job] = r
		j, err := h.tx.Job(ctx, r.Job)
		if ErrorCode(err) == CodeNotFound {
			continue // the agent stops it as unknown
		}
		if err != nil {
			return err
		}
		if !slicesContainsNode(j.Assigned, h.node.Name) {
			continue // not this node's: not in Run, so the agent stops it
		}
		if err := h.applyReport(ctx, j, r); err != nil {
			return err
		}
	}
	return nil
}

// applyReport records one part's report on job j.
func (h *heartbeatTx) applyReport(ctx context.Context, j Job, r JobReport) error {
	prev, had := runOn(j.Runs, h.node.Name)
	if had && prev.Final() {
		if r.LogDone && !prev.LogDone { // the rest of its log has arrived
			prev.LogDone, prev.LogSize = true, r.LogSize
			j.Runs = setRun(j.Runs, prev)
			return h.tx.UpdateJob(ctx, j)
		}
		return nil // recorded; the agent forgets it once acknowledged
	}
	if r.Progress != nil && j.State.Holding() && (prev.Progress == nil || *prev.Progress != *r.Progress) {
		j.Progress = j.Progress.Advance(*r.Progress, j.StartedAt, h.now)
		if err := h.tx.SetProgress(ctx, j.ID, j.Progress); err != nil {
			return err
		}
	}
	if had && prev.State == r.State && !j.State.Finished() {
		return nil // nothing new but readings, which wait for the end
	}
	j.Runs = setRun(j.Runs, NodeRun{Node: h.node.Name, JobReport: r})
	was := j.State
	switch {
	case j.State.Finished():
		// It ended already (its node went down meanwhile, say): keep the report.
	case r.State == RunRunning && j.State == JobStarting:
		j.State = JobRunning
	case r.State == RunDraining && (j.State == JobStarting || j.State == JobRunning):
		j.State = JobDraining
		if j.Stop == nil {
			// The agent began by itself (a cached window the plan has not
			// drained yet): stop it by the agent's deadline, never sooner.
			j.Stop = &StopRequest{Reason: cmp.Or(r.Stopped, StopDrain), At: h.now, Deadline: r.Deadline, Reservation: r.Reservation}
			if d := j.Prediction.Drain; d != nil && (r.Deadline.IsZero() || d.Deadline.Before(r.Deadline)) {
				j.Stop.Reservation, j.Stop.Deadline = d.Reservation, d.Deadline
			}
			if j.Stop.Deadline.IsZero() {
				j.Stop.Deadline = h.now.Add(h.s.nodes.Drain.Grace)
			}
		}
	case r.State == RunExited || r.State == RunRefused:
		partEnded(&j, NodeRun{Node: h.node.Name, JobReport: r}, h.now, h.s.nodes.Drain.Grace)
	}
	if err := h.tx.UpdateJob(ctx, j); err != nil {
		return err
	}
	if j.State == was {
		return nil
	}
	detail := fmt.Sprintf("%s → %s on %s", was, j.State, h.node.Name)
	if j.State.Finished() {
		detail += ": " + endWords(j)
		h.events = append(h.events, finishedEvent(j, h.now, endWords(j)))
	}
	return h.audit(ctx, "job."+string(j.State), JobName(j.ID), detail)
}

// allEnded reports whether every node j holds GPUs on has reported its
// part ended.
func allEnded(j Job) bool {
	for _, node := range nodesOf(j.Assigned) {
		r, ok := runOn(j.Runs, node)
		if !ok || !r.Final() {
			return false
		}
	}
	return true
}

// partEnded moves j along once part (already in j.Runs) has ended: the job
// ends when every part has; until then, a part that failed makes the rest
// of its gang stop (a gang cannot go on without one of its nodes).
func partEnded(j *Job, part NodeRun, now time.Time, grace time.Duration) {
	if allEnded(*j) {
		j.State, j.EndedAt = endState(*j), now
		return
	}
	failed := part.State == RunRefused || part.ExitCode != 0 || part.Error != ""
	if failed && j.Stop == nil && j.State.Holding() {
		j.State = JobDraining
		j.Stop = &StopRequest{Reason: StopFailed, At: now, Deadline: now.Add(grace)}
	}
}

// endState is how a job whose parts have all ended ends.
func endState(j Job) JobState {
	switch {
	case j.Stop != nil && j.Stop.Reason == StopCancelled:
		return JobCancelled
	case j.Stop != nil && j.Stop.Reason == StopFailed:
		return JobFailed
	}
	drained := j.Stop != nil && j.Stop.Reason == StopDrain
	ok := true
	for _, r := range j.Runs {
		drained = drained || r.Stopped == StopDrain
		ok = ok && r.State == RunExited && r.ExitCode == 0 && r.Error == ""
	}
	switch {
	case drained:
		return JobPreempted
	case ok:
		return JobSucceeded
	}
	return JobFailed
}

// endWords says how a finished job ended, for its owner.
func endWords(j Job) string {
	var parts []string
	for _, r := range j.Runs {
		var w string
		switch {
		case r.State == RunRefused:
			w = "could not start: " + r.Error
		case r.Error != "":
			w = r.Error
		case r.Signal != "":
			w = "ended by " + r.Signal
		default:
			w = fmt.Sprintf("exit code %d", r.ExitCode)
		}
		if r.Margin != nil {
			w += fmt.Sprintf(", all processes gone %s before the deadline", r.Margin.Round(10*time.Millisecond))
		}
		if len(j.Assigned) > 0 && len(nodesOf(j.Assigned)) > 1 {
			w = r.Node + ": " + w
		}
		parts = append(parts, w)
	}
	if len(parts) == 0 {
		return string(j.State)
	}
	return strings.Join(parts, "; ")
}

// finishedEvent tells a job's owner how it ended.
func finishedEvent(j Job, now time.Time, how string) Event {
	ran := ""
	if !j.StartedAt.IsZero() {
		ran = " after " + roundedWait(now.Sub(j.StartedAt))
	}
	verb := string(j.State)
	if j.State == JobPreempted {
		verb = "was stopped for a reservation"
		if j.Stop != nil && j.Stop.Reservation != 0 {
			verb = "was stopped for reservation " + ReservationName(j.Stop.Reservation)
		}
	}
	data := map[string]string{DataJob: JobName(j.ID), DataName: j.Name, DataState: string(j.State), DataHow: how}
	if !j.StartedAt.IsZero() {
		data[DataRan] = strconv.FormatInt(int64(now.Sub(j.StartedAt)/time.Second), 10)
	}
	if j.Stop != nil && j.Stop.Reservation != 0 {
		data[DataReservation] = ReservationName(j.Stop.Reservation)
	}
	if est := j.Prediction.Estimate.P50; est > 0 {
		data[DataEstimate] = strconv.FormatInt(int64(est/time.Second), 10)
	}
	return Event{Kind: EventFinished, Job: j.ID, User: j.Owner, At: now,
		Detail:   fmt.Sprintf("%s %s%s (%s).", jobTitle(j), verb, ran, how),
		Data:     data,
		DedupKey: "finished:" + JobName(j.ID)}
}

// desired is the node's desired state, with the warnings it implies.
func (h *heartbeatTx) desired(ctx context.Context) (DesiredState, error) {
	pol := h.s.nodes
	out := DesiredState{Node: h.node.Name, Interval: pol.Interval, Timing: pol.Drain, KillForeign: pol.KillForeign,
		Run: []JobOrder{}, Stop: []StopOrder{}, Windows: []Window{}}
	for _, r := range h.hb.Jobs {
		ack, err := h.acknowledged(ctx, r)
		if err != nil {
			return DesiredState{}, err
		}
		if ack {
			out.Ack = append(out.Ack, r.Job)
		}
	}
	holding, err := h.tx.Jobs(ctx, JobFilter{States: holdingStates})
	if err != nil {
		return DesiredState{}, err
	}
	slices.SortFunc(holding, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	for _, j := range holding {
		if !slicesContainsNode(j.Assigned, h.node.Name) {
			continue
		}
		if r, ok := runOn(j.Runs, h.node.Name); ok && r.Final() {
			continue
		}
		_, reported := h.reported[j.ID]
		if j.Stop != nil {
			if !reported && j.State == JobDraining && j.Stop.Reason == StopCancelled {
				// Cancelled before this node ran it: its part is over. (Read
				// again: Job locks the row on PostgreSQL.)
				fresh, err := h.tx.Job(ctx, j.ID)
				if err != nil {
					return DesiredState{}, err
				}
				if err := h.applyReport(ctx, fresh, JobReport{Job: j.ID, State: RunRefused, Error: "cancelled before it started here", Stopped: StopCancelled}); err != nil {
					return DesiredState{}, err
				}
				continue
			}
			out.Stop = append(out.Stop, pol.Drain.Ladder(j.ID, j.Stop.Reason, j.Stop.Deadline, j.Stop.At))
			out.Stop[len(out.Stop)-1].Reservation = j.Stop.Reservation
			continue
		}
		out.Run = append(out.Run, h.order(j))
		if d := j.Prediction.Drain; d != nil {
			o := pol.Drain.Ladder(j.ID, StopDrain, d.Deadline, laterTime(d.SignalAt, j.StartedAt))
			o.Reservation = d.Reservation
			out.Stop = append(out.Stop, o)
			if !h.now.Before(d.SignalAt) {
				h.events = append(h.events, drainWarning(j, *d, o, h.now))
			}
		}
	}
	if err := h.windows(ctx, &out); err != nil {
		return DesiredState{}, err
	}
	h.foreign()
	return out, nil
}

// acknowledged reports whether the agent may forget a job it reported:
// one refused, or one exited whose whole log the server has (the log is
// kept for the gang's first node only); a job the server does not know
// for this node, once it has ended.
func (h *heartbeatTx) acknowledged(ctx context.Context, r JobReport) (bool, error) {
	switch {
	case r.State == RunRefused:
		return true, nil
	case r.State != RunExited || !r.LogDone:
		return false, nil
	}
	j, err := h.tx.Job(ctx, r.Job)
	if ErrorCode(err) == CodeNotFound {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if nodes := nodesOf(j.Assigned); len(nodes) == 0 || nodes[0] != h.node.Name {
		return true, nil
	}
	_, size, err := h.tx.Log(ctx, r.Job, 0, 0)
	return err == nil && size >= r.LogSize, err
}

// order is job j's part on this node.
func (h *heartbeatTx) order(j Job) JobOrder {
	o := JobOrder{Job: j.ID, User: j.Owner, Project: j.Project, Name: j.Name, Command: slices.Clone(j.Command),
		Env: cloneEnv(j.Env), WorkDir: j.WorkDir, Preemptible: j.Preemptible || j.Class == ClassLow,
		Reservation: j.Reservation, Checkpoint: cmp.Or(j.Checkpoint, "SIGUSR1"), Token: jobToken(h.key, j),
		Epochs: j.Hints.Epochs}
	for _, g := range j.Assigned {
		if g.Node == h.node.Name {
			o.GPUs = append(o.GPUs, g.UUID)
		}
	}
	if nodes := nodesOf(j.Assigned); len(nodes) > 1 {
		o.Nodes = nodes
		o.Rank = slices.Index(nodes, h.node.Name)
	}
	return o
}

// drainWarning tells a job's owner to checkpoint: it is stopped by o.
func drainWarning(j Job, d DrainOrder, o StopOrder, now time.Time) Event {
	return Event{Kind: EventDrainWarning, Job: j.ID, User: j.Owner, At: now,
		Detail: fmt.Sprintf("%s will be stopped at %s for reservation %s: it gets its checkpoint signal at %s, SIGTERM at %s and SIGKILL at %s.",
			jobTitle(j), fmtTime(d.Deadline), ReservationName(d.Reservation), fmtClock(o.CheckpointAt), fmtClock(o.TermAt), fmtClock(o.KillAt)),
		Data: map[string]string{DataJob: JobName(j.ID), DataName: j.Name, DataReservation: ReservationName(d.Reservation),
			DataSignalAt: stampData(o.CheckpointAt), DataDeadline: stampData(d.Deadline)},
		DedupKey: fmt.Sprintf("drain_warning:%s:%d", JobName(j.ID), d.Deadline.Unix())}
}

func fmtClock(t time.Time) string { return t.UTC().Format("15:04:05") }

// windows lists the reservation windows on this node's GPUs.
func (h *heartbeatTx) windows(ctx context.Context, out *DesiredState) error {
	uuids := map[int64]string{}
	for _, g := range h.node.GPUs {
		uuids[g.ID] = g.UUID
	}
	slots, err := h.tx.Slots(ctx, h.now, h.now.Add(WindowsAhead))
	if err != nil {
		return err
	}
	byRes := map[int64]*Window{}
	for _, sl := range slots {
		u, ok := uuids[sl.GPUID]
		if !ok || sl.Job != 0 || !sl.End.After(h.now) {
			continue
		}
		h.slots = append(h.slots, sl)
		w := byRes[sl.Reservation]
		if w == nil {
			w = &Window{Reservation: sl.Reservation, Owner: sl.Owner, Start: sl.Start, End: sl.End}
			byRes[sl.Reservation] = w
		}
		w.GPUs = append(w.GPUs, u)
	}
	for _, w := range byRes {
		slices.Sort(w.GPUs)
		out.Windows = append(out.Windows, *w)
	}
	slices.SortFunc(out.Windows, func(a, b Window) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Reservation, b.Reservation))
	})
	return nil
}

// foreign tells reservation holders (and the processes' owners) of
// processes gpucal did not start on GPUs their window holds now. The
// holder's own processes are theirs to run.
func (h *heartbeatTx) foreign() {
	byUUID := map[string]GPU{}
	for _, g := range h.node.GPUs {
		byUUID[g.UUID] = g
	}
	for _, r := range h.hb.GPUs {
		g, ok := byUUID[r.UUID]
		if !ok {
			continue
		}
		for _, sl := range h.slots {
			if sl.GPUID != g.ID || !sl.Overlaps(h.now, h.now.Add(time.Second)) {
				continue
			}
			for _, p := range r.Processes {
				if p.Job != 0 || p.User == sl.Owner {
					continue
				}
				who := cmp.Or(p.User, "an unknown user")
				detail := fmt.Sprintf("Process %d of %s uses %d MiB on GPU %s, which reservation %s of %s holds until %s; gpucal did not start it.",
					p.PID, who, p.UsedMiB, g.Label(), ReservationName(sl.Reservation), sl.Owner, fmtTime(sl.End))
				key := fmt.Sprintf("foreign:%s:%d:%s", g.UUID, p.PID, ReservationName(sl.Reservation))
				data := map[string]string{DataPID: strconv.Itoa(int(p.PID)), DataUser: p.User, DataGPU: g.Label(),
					DataReservation: ReservationName(sl.Reservation), DataHolder: sl.Owner, DataUntil: stampData(sl.End)}
				h.events = append(h.events, Event{Kind: EventForeignProcess, User: sl.Owner, At: h.now, Detail: detail, Data: data, DedupKey: key + ":holder"})
				if p.User != "" {
					h.events = append(h.events, Event{Kind: EventForeignProcess, User: p.User, At: h.now, Detail: detail, Data: data, DedupKey: key + ":owner"})
				}
			}
		}
	}
}

// runOn returns the part of runs on node.
func runOn(runs []NodeRun, node string) (NodeRun, bool) {
	for _, r := range runs {
		if r.Node == node {
			return r, true
		}
	}
	return NodeRun{}, false
}

// nodesOf lists the nodes of gpus in the order they first appear.
func nodesOf(gpus []GPURef) []string {
	var out []string
	for _, g := range gpus {
		if !slices.Contains(out, g.Node) {
			out = append(out, g.Node)
		}
	}
	return out
}

// lockedNode reads node with its GPUs' rows locked until the transaction
// ends, so that a heartbeat and the liveness check (CheckNodes) never both
// write a node from what they read before the other committed.
func lockedNode(ctx context.Context, tx Tx, node string) (Node, error) {
	n, found, err := nodeNamed(ctx, tx, node)
	if err != nil {
		return Node{}, err
	}
	if !found {
		return Node{}, Errorf(CodeNotFound, "node %s is no longer in the inventory; join again with a join token", node)
	}
	if err := tx.LockGPUs(ctx, gpuIDs(n)); err != nil {
		return Node{}, err
	}
	n, found, err = nodeNamed(ctx, tx, node) // as of the lock
	if !found && err == nil {
		err = Errorf(CodeNotFound, "node %s is no longer in the inventory", node)
	}
	return n, err
}

func gpuIDs(n Node) []int64 {
	ids := make([]int64, 0, len(n.GPUs))
	for _, g := range n.GPUs {
		ids = append(ids, g.ID)
	}
	slices.Sort(ids)
	return ids
}
