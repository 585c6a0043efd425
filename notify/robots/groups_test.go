package robots

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	wecomURL    = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"
	feishuURL   = "https://open.feishu.cn/open-apis/bot/v2/hook/5e3d587e-d78e-4a07-bd07-265f269f86fd"
	dingtalkURL = "https://oapi.dingtalk.com/robot/send?access_token=ff6cd723bdb4455fe18ba30dbeff007f5"
)

func TestParseGroups(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Config
		wantErr string // a part of the error
	}{
		{name: "empty", in: ""},
		{name: "only separators", in: " ; ;"},
		{
			name: "the documented example",
			in:   "wecom=" + wecomURL + ";feishu=" + feishuURL + "|fsecret;dingtalk=" + dingtalkURL + "|SECdsecret;webhook=https://example.org/hook",
			want: []Config{
				{Kind: WeCom, URL: wecomURL},
				{Kind: Feishu, URL: feishuURL, Secret: "fsecret"},
				{Kind: DingTalk, URL: dingtalkURL, Secret: "SECdsecret"},
				{Kind: Webhook, URL: "https://example.org/hook"},
			},
		},
		{
			name:    "spaces, case, a trailing separator and two groups of a kind",
			in:      " WeCom = " + wecomURL + " ;\n wecom=" + wecomURL + "2 | ;",
			wantErr: "group robot 2 (wecom): the secret after | is empty",
		},
		{
			name: "spaces, case and a trailing separator",
			in:   " WeCom = " + wecomURL + " ;\n wecom=" + wecomURL + "2 ;",
			want: []Config{{Kind: WeCom, URL: wecomURL}, {Kind: WeCom, URL: wecomURL + "2"}},
		},
		{name: "no kind", in: wecomURL, wantErr: "group robot 1: the kind before = is one of webhook, wecom, feishu, dingtalk"},
		{name: "no =", in: "webhook:https://example.org/hook", wantErr: "group robot 1: want KIND=URL or KIND=URL|SECRET"},
		{name: "unknown kind", in: "webhook=https://example.org/a;slack=https://hooks.slack.com/services/T/B/X", wantErr: "group robot 2: the kind"},
		{name: "http", in: "wecom=http://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K", wantErr: "group robot 1: the wecom robot's URL http://qyapi.weixin.qq.com/… must be https"},
		{name: "secret where none is taken", in: "wecom=" + wecomURL + "|S", wantErr: "group robot 1: wecom robots are not signed"},
		{name: "dingtalk without its token", in: "dingtalk=https://oapi.dingtalk.com/robot/send|SEC1", wantErr: "has no access_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGroups(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseGroups: %v, want an error with %q", err, tt.wantErr)
				}
				for _, secret := range []string{"693a91f6", "ff6cd723", "5e3d587e", "SEC1", "fsecret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error shows %q: %v", secret, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Config{}, "Render", "Client", "Now"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseGroups (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseGroups checks that what ParseGroups accepts makes robots, and
// reads back the same when written out again.
func FuzzParseGroups(f *testing.F) {
	for _, s := range []string{
		"wecom=" + wecomURL + ";feishu=" + feishuURL + "|S;dingtalk=" + dingtalkURL + "|SEC1;webhook=https://example.org/hook",
		"webhook=http://localhost:8080/x|y", ";;=|", "FEISHU = https://open.larksuite.com/open-apis/bot/v2/hook/t | s ",
		"dingtalk=https://oapi.dingtalk.com/robot/send?access_token=T&timestamp=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfgs, err := ParseGroups(s)
		if err != nil {
			return
		}
		var entries []string
		for _, c := range cfgs {
			if _, err := New(c); err != nil {
				t.Fatalf("ParseGroups(%q) gave %+v, which New refuses: %v", s, c, err)
			}
			e := c.Kind + "=" + c.URL
			if c.Secret != "" {
				e += "|" + c.Secret
			}
			entries = append(entries, e)
		}
		again, err := ParseGroups(strings.Join(entries, ";"))
		if err != nil {
			t.Fatalf("ParseGroups(%q) = %+v, which written out does not parse: %v", s, cfgs, err)
		}
		if diff := cmp.Diff(cfgs, again, cmpopts.IgnoreFields(Config{}, "Render", "Client", "Now"), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("ParseGroups(%q) read back differently (-first +again):\n%s", s, diff)
		}
	})
}
