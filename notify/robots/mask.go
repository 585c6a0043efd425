package robots

import "net/url"

// mask returns what errors may show of a robot's URL: its scheme and host,
// then "/…" when it had more. The key (WeCom's ?key=, DingTalk's
// ?access_token=), the token (Feishu's /hook/TOKEN) and any user:password
// are all in the part left out.
func mask(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(a URL, hidden)"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Opaque != "" || u.Fragment != "" {
		out += "/…"
	}
	return out
}
