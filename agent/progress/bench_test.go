package progress

import (
	"bytes"
	"fmt"
	"testing"
)

// benchLog returns a synthetic job log of about size bytes: a Hugging Face
// run's bar redrawn with '\r' and coloured, log dicts and plain log lines
// between, a Keras epoch now and then.
func benchLog(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		n := i % 5000
		fmt.Fprintf(&b, "\r%3d%%|\x1b[32m%-10s\x1b[39m| %d/5000 [01:23<14:00,  5.41it/s]", n/50, bytes.Repeat([]byte("█"), n/500), n)
		switch i % 20 {
		case 0:
			fmt.Fprintf(&b, "\n{'loss': 0.52, 'grad_norm': 1.3, 'learning_rate': 4.5e-05, 'epoch': %.2f}\n", float64(n)/5000)
		case 7:
			b.WriteString("\n[INFO|trainer.py:2079] 2024-05-01 10:00:07,500 >> saving model checkpoint to out/checkpoint-500\n")
		case 13:
			fmt.Fprintf(&b, "\nEpoch %d/10\n%d/500 [=====>........................] - ETA: 1:02 - loss: 0.4123 - accuracy: 0.8812\n", i%10+1, i%500)
		}
	}
	return b.Bytes()
}

// BenchmarkParser measures a Parser reading a log in the 32 KiB writes a
// pipe delivers; docs/progress.md records the figure.
func BenchmarkParser(b *testing.B) {
	data := benchLog(8 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var p Parser
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			p.Write(rest[:n])
			rest = rest[n:]
		}
		if _, ok := p.Latest(); !ok {
			b.Fatal("no report")
		}
	}
}
