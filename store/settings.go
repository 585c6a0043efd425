package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
)

type settingRow struct {
	bun.BaseModel `bun:"table:settings"`
	Name          string `bun:"name,pk"`
	Value         string `bun:"value"`
}

// EnsureSetting implements core.Tx: the first value stored under a name
// stays, whoever stores it first.
func (t *tx) EnsureSetting(ctx context.Context, name, value string) (string, error) {
	row := settingRow{Name: name, Value: value}
	if _, err := t.db.NewInsert().Model(&row).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
		return "", dbError("insert setting", err)
	}
	var stored settingRow
	if err := t.db.NewSelect().Model(&stored).Where("name = ?", name).Scan(ctx); err != nil {
		return "", dbError("read setting", err)
	}
	return stored.Value, nil
}

// Setting implements core.Tx.
func (t *tx) Setting(ctx context.Context, name string) (string, bool, error) {
	var row settingRow
	err := t.db.NewSelect().Model(&row).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	} else if err != nil {
		return "", false, dbError("read setting", err)
	}
	return row.Value, true, nil
}

// PutSetting implements core.Tx.
func (t *tx) PutSetting(ctx context.Context, name, value string) error {
	row := settingRow{Name: name, Value: value}
	if _, err := t.db.NewInsert().Model(&row).On("CONFLICT (name) DO UPDATE").Set("value = EXCLUDED.value").Exec(ctx); err != nil {
		return dbError("store setting", err)
	}
	return nil
}
