package progress

// follow decides which bar a Parser reports when a job draws several, and
// which bars an epoch header applies to. A Hugging Face job draws datasets
// "Map" bars, then the training bar, with an evaluation bar now and then; a
// Lightning job a sanity check bar, then a training bar and a validation
// bar per epoch; a script may nest a batch bar inside an epoch bar.
//
// The rule: follow one bar until it finishes (shows step == total), then
// whichever bar comes next. The same bar drawn again, for the next epoch
// say, is still the one followed. A bar whose description names an
// evaluation pass takes over only when no bar has been followed yet, so a
// job that only evaluates still reports.
//
// An epoch header ("Epoch 3/10") applies to the first bar drawn after it
// that shows no epoch itself, and to that bar's later drawings, but not to
// a bar that takes over from it (Keras's model.evaluate after model.fit).
// A header is reported itself while no bar is followed or while the
// followed bar takes its epoch from the headers.
//
// What the rule gets wrong: an evaluation bar without a description, after
// training has finished (the Hugging Face Trainer's final evaluate), is
// followed, so the fraction drops back for it; and a bar left unfinished
// (a loop broken off early) keeps the bars after it from being reported.
type follow struct {
	active  bool   // a bar is followed
	bar     barKey // the bar followed
	done    bool   // it showed step == total
	headers bool   // it takes its epoch from the headers

	header     epochText // the last epoch header
	headerBar  barKey    // the bar it applies to
	headerUsed bool      // headerBar is set
}

// admit reports whether a Parser reports rd, records the bar it now
// follows and, for a bar that shows no epoch, sets rd's epoch from the
// header that applies to it.
func (f *follow) admit(rd *reading) bool {
	if !rd.bar {
		f.header, f.headerUsed = rd.epoch, false
		return !f.active || f.headers
	}
	k := rd.key()
	if f.active && k != f.bar && (rd.eval || !f.done) {
		return false
	}
	own := rd.epoch.shown
	f.active, f.bar, f.done, f.headers = true, k, rd.step == rd.total, !own
	if !own && (!f.headerUsed || f.headerBar == k) {
		rd.epoch = f.header
		f.headerBar, f.headerUsed = k, true
	}
	return true
}
