package store

import (
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// stamp is an instant as the database stores it: TIMESTAMPTZ on PostgreSQL,
// INTEGER unix milliseconds (UTC) on SQLite, so that SQLite compares
// instants as numbers and never through a text format. Both keep
// milliseconds; finer digits are dropped when a stamp is written.
//
// Every instant that goes into a query, as a column or an argument, must be
// a stamp: a bare time.Time would be written as text on SQLite.
type stamp time.Time

// AppendQuery writes s as the dialect's literal; bun calls it.
func (s stamp) AppendQuery(gen schema.QueryGen, b []byte) ([]byte, error) {
	t := time.Time(s).UTC().Truncate(time.Millisecond)
	if gen.Dialect().Name() == dialect.SQLite {
		return strconv.AppendInt(b, t.UnixMilli(), 10), nil
	}
	return gen.Dialect().AppendTime(b, t), nil
}

// Scan reads a SQLite integer or a PostgreSQL timestamp.
func (s *stamp) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*s = stamp(time.UnixMilli(v).UTC())
	case time.Time:
		*s = stamp(v.UTC())
	case nil:
		*s = stamp{}
	default:
		return fmt.Errorf("store: cannot read %T as an instant", src)
	}
	return nil
}

// Time returns s as a UTC time.Time.
func (s stamp) Time() time.Time { return time.Time(s) }

// IsZero reports whether s is the zero instant; bun writes a zero stamp in
// a nullzero column as NULL.
func (s stamp) IsZero() bool { return time.Time(s).IsZero() }

// nullStamp is t as a query argument: NULL when t is zero.
func nullStamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return stamp(t)
}
