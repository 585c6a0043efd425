package robots

import (
	"fmt"
	"strings"
)

// ParseGroups reads the group robots setting (GPUCAL_NOTIFY_GROUPS):
// entries separated by ";", each KIND=URL with an optional |SECRET, e.g.
//
//	wecom=https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…;feishu=https://open.feishu.cn/open-apis/bot/v2/hook/…|SECRET
//
// Spaces around the parts and empty entries are ignored; kinds are read
// in any case. Each entry is checked as New checks it; the configs come
// back with Render, Client and Now unset. Errors name the entry by its
// place and show no URL beyond its host, and no secret.
func ParseGroups(s string) ([]Config, error) {
	var out []Config
	for i, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		kind, rest, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("group robot %d: want KIND=URL or KIND=URL|SECRET", i+1)
		}
		rawURL, secret, signed := strings.Cut(rest, "|")
		cfg := Config{Kind: strings.ToLower(strings.TrimSpace(kind)), URL: strings.TrimSpace(rawURL), Secret: strings.TrimSpace(secret)}
		if !validKind(cfg.Kind) {
			return nil, fmt.Errorf("group robot %d: the kind before = is one of %s", i+1, strings.Join(kinds, ", "))
		}
		if signed && cfg.Secret == "" {
			return nil, fmt.Errorf("group robot %d (%s): the secret after | is empty", i+1, cfg.Kind)
		}
		if _, err := validate(cfg); err != nil {
			return nil, fmt.Errorf("group robot %d: %w", i+1, err)
		}
		out = append(out, cfg)
	}
	return out, nil
}
