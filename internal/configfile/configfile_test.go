package configfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exampleConfig has a key of every kind the agent's plugins use.
type exampleConfig struct {
	Name    string              `json:"name"`
	Count   int                 `json:"count"`
	MTU     uint32              `json:"mtu"`
	Period  Duration            `json:"period"`
	Mode    FileMode            `json:"mode"`
	Enabled bool                `json:"enabled"`
	Lists   map[string][]string `json:"lists,omitempty"`
	//lint:ignore U1000 an unexported field, which must not be a key: "unexported field is no key" below.
	ignored string
}

func defaultExample() exampleConfig {
	return exampleConfig{Name: "memif", Count: 4, Period: Duration(time.Minute), Mode: 0o600}
}

// validExample refuses a negative count, as a plugin's Validate would.
type validExample struct {
	Count int `json:"count"`
}

func (c *validExample) Validate() error {
	if c.Count < 0 {
		return &KeyError{Key: "count", Reason: fmt.Sprintf("must not be negative, got %d", c.Count)}
	}
	return nil
}

func TestDecodeKeepsDefaultsAndSetsKeys(t *testing.T) {
	cases := []struct {
		name    string
		content string
		change  func(*exampleConfig)
	}{
		{"empty", "", func(*exampleConfig) {}},
		{"only a comment", "# nothing set\n", func(*exampleConfig) {}},
		{"empty map", "{}", func(*exampleConfig) {}},
		{"null value keeps the default", "count:\n", func(*exampleConfig) {}},
		{"every key", "name: x\ncount: -2\nmtu: 9000\nperiod: 250ms\nmode: \"0660\"\nenabled: true\nlists: {a: [b]}\n",
			func(c *exampleConfig) {
				*c = exampleConfig{Name: "x", Count: -2, MTU: 9000, Period: Duration(250 * time.Millisecond),
					Mode: 0o660, Enabled: true, Lists: map[string][]string{"a": {"b"}}}
			}},
		{"empty mode is zero", `mode: ""`, func(c *exampleConfig) { c.Mode = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := defaultExample(), defaultExample()
			tc.change(&want)
			if err := Decode([]byte(tc.content), &got); err != nil {
				t.Fatalf("Decode(%q): %v", tc.content, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Decode(%q) = %+v, want %+v", tc.content, got, want)
			}
		})
	}
}

func TestDecodeNamesTheKey(t *testing.T) {
	cases := []struct {
		name    string
		content string
		wantKey string
		wantMsg string
	}{
		{"duration garbage", "period: soon", "period", `config key "period": want a duration such as "30s", got "soon"`},
		{"duration without unit", "period: 30", "period", `want a duration such as "30s", got 30`},
		{"mode not octal", `mode: "0690"`, "mode", `want quoted octal permission bits within 0777 such as "0660", got "0690"`},
		{"mode setuid", `mode: "4755"`, "mode", "within 0777"},
		{"mode bare number", "mode: 0660", "mode", "quoted octal"},
		{"count a word", "count: many", "count", `config key "count": want a whole number, got a string`},
		{"count a fraction", "count: 1.5", "count", "want a whole number, got 1.5"},
		{"negative mtu", "mtu: -1", "mtu", "want a whole number from 0 to 4294967295, got -1"},
		{"huge mtu", "mtu: 5000000000", "mtu", "got 5000000000"},
		{"name a list", "name: [a]", "name", "want a string, got a list"},
		{"enabled a word", "enabled: maybe", "enabled", "want true or false, got a string"},
		{"lists a string", "lists: a", "lists", "want a map of keys to values, got a string"},
		{"misspelt key", "cuont: 3", "cuont", "unknown key; the keys are count, enabled, lists, mode, mtu, name, period"},
		{"unexported field is no key", "ignored: x", "ignored", "unknown key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultExample()
			err := Decode([]byte(tc.content), &cfg)
			var keyErr *KeyError
			if !errors.As(err, &keyErr) {
				t.Fatalf("Decode(%q) error = %v, want a *KeyError", tc.content, err)
			}
			if keyErr.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Decode(%q) error = %q, want key %q and %q", tc.content, err, tc.wantKey, tc.wantMsg)
			}
		})
	}
}

func TestDecodeReportsEveryKey(t *testing.T) {
	cfg := defaultExample()
	err := Decode([]byte("count: x\nperiod: y\nnmae: z\n"), &cfg)
	for _, key := range []string{"count", "period", "nmae"} {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("config key %q", key)) {
			t.Errorf("Decode error = %v, want it to name %q", err, key)
		}
	}
}

func TestDecodeRefusesFiles(t *testing.T) {
	cases := []struct{ name, content, wantMsg string }{
		{"not YAML", "count: [", "not valid YAML"},
		{"duplicate key", "count: 1\ncount: 2\n", "not valid YAML"},
		{"a list, not a map", "- count\n", "the file must be a map of keys to values, got a list"},
		{"a scalar, not a map", "7", "the file must be a map of keys to values, got a number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultExample()
			err := Decode([]byte(tc.content), &cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Decode(%q) error = %v, want it to mention %q", tc.content, err, tc.wantMsg)
			}
		})
	}
}

func TestDecodeValidates(t *testing.T) {
	cases := []struct {
		name    string
		content string
		wantErr bool
	}{
		{"valid", "count: 3", false},
		{"defaults validated too", "", false},
		{"invalid", "count: -3", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cfg validExample
			err := Decode([]byte(tc.content), &cfg)
			var keyErr *KeyError
			if tc.wantErr != errors.As(err, &keyErr) {
				t.Errorf("Decode(%q) = %v, want a *KeyError: %v", tc.content, err, tc.wantErr)
			}
		})
	}
}

func TestDecodeWantsAPointerToAStruct(t *testing.T) {
	var count int
	for _, cfg := range []any{nil, defaultExample(), &count, (*exampleConfig)(nil)} {
		if err := Decode([]byte("count: 1"), cfg); err == nil || !strings.Contains(err.Error(), "want a pointer to a struct") {
			t.Errorf("Decode into %T = %v, want a refusal", cfg, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name       string
		path       string
		wantCount  int
		wantErr    string
		wantNotExt bool
	}{
		{name: "no file keeps the defaults", path: "", wantCount: 4},
		{name: "file over the defaults", path: write("good.conf", "count: 9\n"), wantCount: 9},
		{name: "bad value names the file and key", path: write("bad.conf", "count: x\n"),
			wantErr: `bad.conf: config key "count": want a whole number`},
		{name: "unreadable file", path: filepath.Join(dir, "absent.conf"), wantErr: "read config file", wantNotExt: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultExample()
			err := Load(tc.path, &cfg)
			if tc.wantErr == "" {
				if err != nil || cfg.Count != tc.wantCount {
					t.Errorf("Load(%q) = %v, count %d; want nil, count %d", tc.path, err, cfg.Count, tc.wantCount)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Load(%q) = %v, want an error with %q", tc.path, err, tc.wantErr)
			}
			if tc.wantNotExt && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Load(%q) = %v, want fs.ErrNotExist", tc.path, err)
			}
		})
	}
}

func TestValueTypesRoundTrip(t *testing.T) {
	type values struct {
		Period Duration `json:"period"`
		Mode   FileMode `json:"mode"`
	}
	in := values{Period: Duration(90 * time.Second), Mode: 0o750}
	if got := in.Mode.String(); got != "0750" {
		t.Errorf("FileMode(0o750).String() = %q, want \"0750\"", got)
	}
	if got := in.Period.String(); got != "1m30s" {
		t.Errorf("Duration(90s).String() = %q, want \"1m30s\"", got)
	}
	var out values
	if err := Decode([]byte(`{"period": "1m30s", "mode": "0750"}`), &out); err != nil || out != in {
		t.Errorf("Decode = %+v, %v; want %+v", out, err, in)
	}
	if in.Mode.Perm() != 0o750 || in.Period.Duration() != 90*time.Second {
		t.Errorf("Perm() = %v, Duration() = %v", in.Mode.Perm(), in.Period.Duration())
	}
}

func TestProblemsJoinsEveryKey(t *testing.T) {
	cases := []struct {
		name     string
		record   func(*Problems)
		wantKeys []string
		wantMsgs []string
	}{
		{"nothing wrong", func(p *Problems) {
			p.Check("a", "")
			p.CheckPositive("period", Duration(time.Second), "1s")
		}, nil, nil},
		{"every kind", func(p *Problems) {
			p.Check("a", "must be b, got c")
			p.Addf("count", "must be 1..%d, got %d", 9, 0)
			p.CheckPositive("period", 0, "30s")
		}, []string{"a", "count", "period"}, []string{
			`config key "a": must be b, got c`,
			`config key "count": must be 1..9, got 0`,
			`config key "period": must be a positive duration such as "30s", got 0s`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var problems Problems
			tc.record(&problems)
			err := problems.Err()
			if len(tc.wantKeys) == 0 {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				return
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok || len(joined.Unwrap()) != len(tc.wantKeys) {
				t.Fatalf("Err() = %v, want %d joined problems", err, len(tc.wantKeys))
			}
			for i, problem := range joined.Unwrap() {
				var keyErr *KeyError
				if !errors.As(problem, &keyErr) || keyErr.Key != tc.wantKeys[i] || problem.Error() != tc.wantMsgs[i] {
					t.Errorf("problem %d = %v, want key %q: %q", i, problem, tc.wantKeys[i], tc.wantMsgs[i])
				}
			}
		})
	}
}

// frameworkExample is shaped like cn-infra's http.conf: fields without a
// json tag beside tagged ones.
type frameworkExample struct {
	Endpoint    string
	ReadTimeout time.Duration
	CertFile    string `json:"server-cert-file"`
}

func TestDecodeUntaggedFieldsMatchAnyCase(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    frameworkExample
		wantErr string // part of the error; "" for none
	}{
		{"lower case", "endpoint: 127.0.0.1:9191\nreadtimeout: 5\n", frameworkExample{Endpoint: "127.0.0.1:9191", ReadTimeout: 5}, ""},
		{"field name", "Endpoint: x\nReadTimeout: 7\n", frameworkExample{Endpoint: "x", ReadTimeout: 7}, ""},
		{"tagged key", "server-cert-file: /c.pem\n", frameworkExample{CertFile: "/c.pem"}, ""},
		{"tagged key in another case", "Server-Cert-File: /c.pem\n", frameworkExample{},
			`config key "Server-Cert-File": unknown key; the keys are endpoint, readtimeout, server-cert-file`},
		{"misspelt untagged key", "endpiont: x\n", frameworkExample{}, `config key "endpiont": unknown key`},
		{"wrong type", "endpoint: [x]\n", frameworkExample{}, `config key "endpoint": want a string, got a list`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got frameworkExample
			err := Decode([]byte(tc.content), &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Decode(%q) = %v, want an error containing %q", tc.content, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Decode(%q) = %+v, %v; want %+v", tc.content, got, err, tc.want)
			}
		})
	}
}
