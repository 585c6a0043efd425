package progress

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tq draws a tqdm bar at n of total, as tqdm would.
func tq(desc string, n, total int) string {
	prefix := ""
	if desc != "" {
		prefix = desc + ": "
	}
	return fmt.Sprintf("%s%3d%%|%-10s| %d/%d [00:01<00:01,  5.00it/s]",
		prefix, 100*n/total, strings.Repeat("█", 10*n/total), n, total)
}

// brief is a report in a line: format, step/total, epoch/epochs, fraction.
func brief(r Report) string {
	return fmt.Sprintf("%s %d/%d %d/%d %.4f", r.Format, r.Step, r.Total, r.Epoch, r.Epochs, r.Fraction)
}

func briefs(rs []Report) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = brief(r)
	}
	return out
}

// TestParserFollows checks which bar a Parser reports when a job draws
// several, and which bars an epoch header applies to (see follow).
func TestParserFollows(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"an evaluation bar while training is not reported",
			[]string{tq("", 500, 5000), tq("", 21, 63), tq("", 63, 63), tq("", 1000, 5000)},
			[]string{"tqdm 500/5000 0/0 0.1000", "tqdm 1000/5000 0/0 0.2000"}},
		{"the next bar takes over from a finished one",
			[]string{tq("Map", 25000, 25000), tq("", 0, 5000), tq("", 5, 5000)},
			[]string{"tqdm 25000/25000 0/0 1.0000", "tqdm 0/5000 0/0 0.0000", "tqdm 5/5000 0/0 0.0010"}},
		{"an unfinished bar keeps its place",
			[]string{tq("Map", 100, 25000), tq("", 10, 5000)},
			[]string{"tqdm 100/25000 0/0 0.0040"}},
		{"a job that only evaluates reports",
			[]string{tq("Evaluating", 10, 50), tq("Evaluating", 50, 50)},
			[]string{"tqdm 10/50 0/0 0.2000", "tqdm 50/50 0/0 1.0000"}},
		{"an evaluation bar never takes over",
			[]string{tq("Epoch 0", 267, 267), tq("Validation DataLoader 0", 20, 50), tq("Epoch 1", 0, 267)},
			[]string{"lightning 267/267 1/0 1.0000", "lightning 0/267 2/0 0.0000"}},
		{"training takes over from the sanity check",
			[]string{tq("Sanity Checking DataLoader 0", 2, 2), tq("Epoch 0", 1, 267)},
			[]string{"lightning 2/2 0/0 1.0000", "lightning 1/267 1/0 0.0037"}},
		{"nested bars: the outer one is followed",
			[]string{tq("Rounds", 0, 3), tq("Batches", 20, 40), tq("Batches", 40, 40), tq("Rounds", 1, 3)},
			[]string{"tqdm 0/3 0/0 0.0000", "tqdm 1/3 0/0 0.3333"}},
		{"a header applies to the bar after it",
			[]string{"Epoch 2/3", "120/500 [=====>........................] - ETA: 1:02"},
			[]string{"keras 0/0 2/3 0.3333", "keras 120/500 2/3 0.4133"}},
		{"a header applies to a bar that takes over after it",
			[]string{tq("Map", 10, 10), "Epoch 1/2", tq("", 60, 120)},
			[]string{"tqdm 10/10 0/0 1.0000", "keras 0/0 1/2 0.0000", "tqdm 60/120 1/2 0.2500"}},
		{"a header does not apply to a bar that takes over from its bar",
			[]string{"Epoch 3/3", "500/500 [==============================] - 12s 24ms/step", "157/313 [====>...] - ETA: 0s"},
			[]string{"keras 0/0 3/3 0.6667", "keras 500/500 3/3 1.0000", "keras 157/313 0/0 0.5016"}},
		{"a header is not reported over a bar with its own epoch",
			[]string{tq("Epoch 2/3", 10, 100), "Epoch 3/3"},
			[]string{"tqdm 10/100 2/3 0.3667"}},
		{"an epoch 0 shows the job counts from 0",
			[]string{"Epoch 0/3", "Epoch 1/3", tq("Epoch 2/3", 50, 100)},
			[]string{"keras 0/0 1/3 0.0000", "keras 0/0 2/3 0.3333", "tqdm 50/100 3/3 0.8333"}},
		{"lightning's epoch 0 says nothing of a script's counting",
			[]string{tq("Epoch 0", 10, 100), "Epoch 1/3"},
			[]string{"lightning 10/100 1/0 0.1000"}},
		{"a line whose numbers contradict each other changes nothing",
			[]string{tq("", 10, 10), "Epoch 11/10:  24%|██▍       | 120/500", tq("C", 1, 4)},
			[]string{"tqdm 10/10 0/0 1.0000", "tqdm 1/4 0/0 0.2500"}},
		{"a header whose numbers contradict each other is not remembered",
			[]string{"Epoch 11/10", "120/500 [=====>........................] - ETA: 1:02"},
			[]string{"keras 120/500 0/0 0.2400"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := briefs(reportsOf([]byte(strings.Join(tt.lines, "\n") + "\n")))
			if !slices.Equal(got, tt.want) {
				t.Errorf("reports of\n\t%s\n= %q\nwant %q", strings.Join(tt.lines, "\n\t"), got, tt.want)
			}
		})
	}
}

func TestParserLatest(t *testing.T) {
	var p Parser // the zero Parser is ready to use
	if r, ok := p.Latest(); ok {
		t.Fatalf("Latest before any output = %+v, want none", r)
	}
	line := tq("", 450, 1000)
	if n, err := p.Write([]byte("\r" + line)); n != len(line)+1 || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(line)+1)
	}
	if r, ok := p.Latest(); ok {
		t.Fatalf("Latest with the drawing not ended = %+v, want none (it is read when the next begins)", r)
	}
	p.Flush()
	r, ok := p.Latest()
	if !ok || r.Step != 450 {
		t.Fatalf("Latest after Flush = %+v, %v; want step 450", r, ok)
	}
	p.Write([]byte("\r" + tq("", 500, 1000) + "\rnot a bar\n"))
	if r, _ := p.Latest(); r.Step != 500 {
		t.Errorf("Latest = %+v, want step 500 (a later line without progress keeps it)", r)
	}
}

// TestParserLongLines checks that a line longer than maxLine is dropped
// whole and costs no more than maxLine of buffer, however it is written.
func TestParserLongLines(t *testing.T) {
	bar := tq("", 450, 1000)
	pad := func(n int) string { return strings.Repeat(" ", n-len(bar)) + bar }
	tests := []struct {
		name   string
		chunks []string
		want   int // reports
	}{
		{"at the limit", []string{pad(maxLine) + "\n"}, 1},
		{"past the limit", []string{pad(maxLine+1) + "\n"}, 0},
		{"past the limit in pieces", []string{pad(maxLine + 1)[:100], pad(maxLine + 1)[100:], "\n"}, 0},
		{"at the limit in pieces", []string{pad(maxLine)[:maxLine-1], pad(maxLine)[maxLine-1:], "\n"}, 1},
		{"megabytes without a newline, then a bar", []string{strings.Repeat("x", 50*maxLine), "\r" + bar + "\n"}, 1},
		{"a bar after a long line, unended", []string{strings.Repeat("x", 2*maxLine) + "\n" + bar}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got int
			p := NewParser(func(Report) { got++ })
			for _, c := range tt.chunks {
				p.Write([]byte(c))
				if cap(p.line) > maxLine {
					t.Fatalf("line buffer of %d bytes, want at most %d", cap(p.line), maxLine)
				}
			}
			p.Flush()
			if got != tt.want {
				t.Errorf("%d reports, want %d", got, tt.want)
			}
		})
	}
}

// chunkSample cuts inside "\r\n", inside the three bytes of a block
// character and inside colour sequences, wherever the cut falls.
const chunkSample = "Epoch 1/2\r\n\x1b[1m500/500\x1b[0m \x1b[32m━━━━━━━━\x1b[0m 12s 24ms/step\r" +
	"Training: 100%|\x1b[32m██████████\x1b[39m| 1000/1000 [03:02<00:00,  5.48it/s]\r\n" +
	"Epoch 2/9 ━━━━━━━━━━━━━━━━━━━━ 267/267 0:00:24 • 0:00:00 11.20it/s\x1b[A\r" +
	"Epoch 3/10:  24%|██▍       | 120/500 [00:10<00:31, 12.00it/s]"

// TestParserChunking checks that the reports do not depend on how the
// output is cut into writes: at every byte of a sample, byte by byte, and
// in random pieces of every testdata log.
func TestParserChunking(t *testing.T) {
	sample := []byte(chunkSample)
	whole := reportsOf(sample)
	if len(whole) < 4 {
		t.Fatalf("the sample gives %d reports, want at least 4", len(whole))
	}
	for i := range sample {
		if got := reportsOf(sample[:i], sample[i:]); !slices.Equal(got, whole) {
			t.Fatalf("cut at byte %d (%q|%q): reports\n%q\nwant\n%q", i, sample[max(i-5, 0):i], sample[i:min(i+5, len(sample))], briefs(got), briefs(whole))
		}
	}
	logs, _ := filepath.Glob("testdata/*.log")
	for _, path := range append(logs, "") {
		name, data := "sample", sample
		if path != "" {
			name = filepath.Base(path)
			var err error
			if data, err = os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(name, func(t *testing.T) {
			whole := reportsOf(data)
			if got := reportsOf(bytePieces(data)...); !slices.Equal(got, whole) {
				t.Errorf("byte by byte: reports\n%q\nwant\n%q", briefs(got), briefs(whole))
			}
			for seed := range uint64(20) {
				if got := reportsOf(randomPieces(data, seed)...); !slices.Equal(got, whole) {
					t.Errorf("random pieces, seed %d: reports\n%q\nwant\n%q", seed, briefs(got), briefs(whole))
				}
			}
		})
	}
}

func bytePieces(data []byte) [][]byte {
	out := make([][]byte, len(data))
	for i := range data {
		out[i] = data[i : i+1]
	}
	return out
}

// randomPieces cuts data into pieces of 0 to 64 bytes, now and then longer.
func randomPieces(data []byte, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out [][]byte
	for len(data) > 0 {
		n := rng.IntN(65)
		if rng.IntN(10) == 0 {
			n = rng.IntN(4096)
		}
		n = min(n, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// TestParserConcurrent writes from two goroutines while a third reads
// Latest; run it with -race.
func TestParserConcurrent(t *testing.T) {
	var p Parser
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range 200 {
				p.Write([]byte(tq("", i, 1000) + "\n"))
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			if r, ok := p.Latest(); ok {
				if err := checkReport(r); err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Wait()
	if r, ok := p.Latest(); !ok || r.Step != 199 {
		t.Errorf("Latest = %+v, %v; want step 199", r, ok)
	}
}
