package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gpucal/gpucal/core"
)

type notifyPrefsRow struct {
	bun.BaseModel `bun:"table:notify_prefs"`
	User          string `bun:"user_name,pk"`
	Muted         string `bun:"muted"`
	QuietFrom     int    `bun:"quiet_from"`
	QuietTo       int    `bun:"quiet_to"`
	Zone          string `bun:"tz"`
	Via           string `bun:"via"`
}

// NotifyPrefs implements core.Tx.
func (t *tx) NotifyPrefs(ctx context.Context, user string) (core.NotifyPrefs, error) {
	var row notifyPrefsRow
	err := t.db.NewSelect().Model(&row).Where("user_name = ?", user).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.NotifyPrefs{User: user, Zone: "UTC"}, nil
	} else if err != nil {
		return core.NotifyPrefs{}, dbError("notification settings", err)
	}
	p := core.NotifyPrefs{User: user, QuietFrom: max(row.QuietFrom, 0), QuietTo: max(row.QuietTo, 0), Zone: row.Zone}
	for _, k := range strings.Split(row.Muted, ",") {
		if k != "" {
			p.Muted = append(p.Muted, core.EventKind(k))
		}
	}
	if row.Via != "" {
		if p.Via, err = core.ParseVia(nil, row.Via); err != nil {
			return core.NotifyPrefs{}, fmt.Errorf("notification settings of %s: %w", user, err)
		}
	}
	return p, nil
}

// SetNotifyPrefs implements core.Tx.
func (t *tx) SetNotifyPrefs(ctx context.Context, p core.NotifyPrefs) error {
	muted := make([]string, len(p.Muted))
	for i, k := range p.Muted {
		muted[i] = string(k)
	}
	row := notifyPrefsRow{User: p.User, Muted: strings.Join(muted, ","), QuietFrom: p.QuietFrom, QuietTo: p.QuietTo, Zone: p.Zone, Via: core.FormatVia(p.Via)}
	_, err := t.db.NewInsert().Model(&row).
		On("CONFLICT (user_name) DO UPDATE").
		Set("muted = EXCLUDED.muted, quiet_from = EXCLUDED.quiet_from, quiet_to = EXCLUDED.quiet_to, tz = EXCLUDED.tz, via = EXCLUDED.via").Exec(ctx)
	if err != nil {
		if isForeignKey(err) {
			return notFound("user %s", p.User)
		}
		return dbError("store notification settings", err)
	}
	return nil
}
