package store

import (
	"context"
	"testing"
	"time"

	"github.com/gpucal/gpucal/core"
	"github.com/gpucal/gpucal/store/storetest"
)

// eachB runs f per database, like storetest.Each.
func eachB(b *testing.B, f func(b *testing.B, dsn string)) {
	b.Run("sqlite", func(b *testing.B) { f(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { f(b, storetest.Postgres(b)) })
}

// BenchmarkSlots reads the next week of a calendar that holds a year of
// two-hour bookings on six GPUs (about 17,500 slots), most of them past.
func BenchmarkSlots(b *testing.B) {
	eachB(b, func(b *testing.B, dsn string) {
		f := newFixture(b, dsn)
		ctx := context.Background()
		gpus := append(append([]core.GPU{}, f.a100.GPUs...), f.h100.GPUs...)
		update(b, f.db, func(tx core.Tx) error {
			for h := 0; h < 365*24; h += 2 {
				for i, g := range gpus {
					if (h/2+i)%3 == 0 { // leave gaps
						continue
					}
					r := reservation("alice", hours(float64(h)), hours(float64(h+2)), g)
					if err := tx.InsertReservation(ctx, &r); err != nil {
						return err
					}
				}
			}
			return nil
		})
		from := hours(358 * 24) // "now": a week before the last booking
		b.ResetTimer()
		for b.Loop() {
			var n int
			err := f.db.View(ctx, func(tx core.Tx) error {
				slots, err := tx.Slots(ctx, from, from.Add(7*24*time.Hour))
				n = len(slots)
				return err
			})
			if err != nil || n == 0 {
				b.Fatalf("Slots: %d slots, %v", n, err)
			}
		}
	})
}

// BenchmarkBook books one GPU-hour at a time the way core does: read the
// slots of the window, then insert.
func BenchmarkBook(b *testing.B) {
	eachB(b, func(b *testing.B, dsn string) {
		f := newFixture(b, dsn)
		ctx := context.Background()
		g := f.a100.GPUs[0]
		i := 0
		for b.Loop() {
			start := hours(float64(i))
			i++
			err := f.db.Update(ctx, func(tx core.Tx) error {
				if _, err := tx.Slots(ctx, start, start.Add(time.Hour)); err != nil {
					return err
				}
				r := reservation("alice", start, start.Add(time.Hour), g)
				return tx.InsertReservation(ctx, &r)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
