// Package sim replays job traces through gpucal's planner on a virtual
// clock, next to the policies it is measured against, so that waits,
// completion times, utilisation, start-time predictions and the keeping of
// booked windows can be compared on real workloads (`gpucal sim`).
//
// sim imports core and the standard library only, and only cmd/gpucal
// imports it. It does no IO beyond the readers it is handed; the command
// opens files and pipes .xz traces through the xz program.
//
// # Traces
//
// LoadPhilly, LoadSWF and LoadHelios read the Philly-derived CSV, the
// Standard Workload Format and the Helios/Philly job-log CSV from plain-text
// readers, with errors that name the line. In an SWF trace processors play
// the GPUs: replay it on Nodes = the machine's processors with one GPU per
// node, so that a 32-processor job takes 32 whole nodes.
//
// Two evaluations read the same traces without a cluster: Evaluate scores
// core.History's runtime estimates in submission order (`gpucal eval
// estimate`), and EvaluateProgress scores core's live-progress estimate on
// the Alibaba PAI mini-batch timings that LoadMiniBatch reads (`gpucal eval
// progress`).
//
// # The model
//
// A cluster of Nodes × GPUsPerNode identical GPUs. A job that fits one node
// runs on one node; a larger one needs wholly free nodes and, as core's
// planner does, uses only the GPUs it asked for on the last. Jobs larger
// than the cluster are dropped and counted. Jobs run exactly as long as the
// trace says, whatever a policy expected.
//
// Every policy learns runtimes the same causal way, only from jobs that
// have finished, with the estimator Config.Estimator names: by default the
// request scaled by the user's habit (historyEstimator), or core.History,
// the server's own estimator. fifo, sjf-oracle and easy expect a job to
// run for its requested time when the trace has one, else for the
// estimator's P90 (sjf-oracle knows the truth); gpucal gets the estimator's
// P50 and P90 in the snapshot and re-estimates running jobs that outlive
// their median.
//
// # Bookings
//
// Config.Reservations draws synthetic bookings of whole nodes, made 2 to 12
// hours ahead and 1 to 4 hours long, the same requests for every policy.
// Each takes, when it is made, nodes that no other window holds and that no
// non-preemptible job is expected to hold by then (as core's booking rules
// do); a request that finds none is refused. Policies see a window once it
// is booked: gpucal in the snapshot's reservations, the others as a rule
// that a non-preemptible job may not start where it is expected to run
// into a window. Preemptible jobs (Config.Preemptible) may use any free
// GPU. When a window opens, every job on its GPUs is stopped and queued
// again with the work it had left, as the agent stops whatever holds a
// window's GPUs when it opens: the window starts on time when its GPUs are
// then free (reservations_honored), and is undisturbed when none of the
// stopped jobs was non-preemptible (reservations_undisturbed).
//
// # Start predictions
//
// For easy and gpucal each job's promised start is recorded at submission
// and compared with the start it got: gpucal's from the first plan after
// submission (P50 and P90), easy's from laying the queue ahead of the job out
// on the running jobs' expected ends, which is what a Slurm user is told.
package sim
