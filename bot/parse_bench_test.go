package bot

import (
	"testing"
	"time"
)

// BenchmarkParse reads a typical English and a typical Chinese booking.
func BenchmarkParse(b *testing.B) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		b.Skip(err)
	}
	now := time.Date(2026, 12, 2, 15, 4, 0, 0, loc)
	for _, text := range []string{"book 4 a100 tomorrow 9-13 for llama finetune", "订两张H100 今晚8点起 6小时"} {
		b.Run(text, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(text, now, loc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
