// Package progress reads how far a training job has got from what the job
// already prints, so that a job reports progress without code changes: the
// progress bars of tqdm, PyTorch Lightning (its tqdm and rich bars), the
// Hugging Face Trainer (a tqdm bar) and Keras, and the progress file a job
// may write itself (GPUCAL_PROGRESS_FILE). docs/progress.md describes all
// three ways a job reports progress.
//
// ParseLine reads one line. Parser is the io.Writer the node agent tees a
// job's output into: it splits the stream into lines, follows one progress
// bar at a time and keeps the latest Report. ParseFile reads a progress
// file.
//
// The package imports the standard library only; it is meant for the node
// agent and for tools that read job logs.
package progress
