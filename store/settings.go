package store

import (
	"context"

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
