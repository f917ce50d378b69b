package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recached/recached/server"
)

func TestSplitConfigArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil with ok false: refused
		ok   bool
	}{
		{"", nil, true},
		{"   \t ", nil, true},
		{"port 7000", []string{"port", "7000"}, true},
		{"  save   900   1  ", []string{"save", "900", "1"}, true},
		{`requirepass ""`, []string{"requirepass", ""}, true},
		{`requirepass "a b"`, []string{"requirepass", "a b"}, true},
		{`x "a\nb\r\t\b\a"`, []string{"x", "a\nb\r\t\b\a"}, true},
		{`x "\x41\x7a\x4"`, []string{"x", "Azx4"}, true},
		{`x "q\"uote\\"`, []string{"x", `q"uote\`}, true},
		{`x 'it\'s'`, []string{"x", "it's"}, true},
		{`x 'a\nb'`, []string{"x", `a\nb`}, true},
		{`x a"b"c`, []string{"x", `a"b"c`}, true},
		{`x "a"b`, nil, false},
		{`x 'a'b`, nil, false},
		{`x "abc`, nil, false},
		{`x 'abc`, nil, false},
		{`x "a" "b"`, []string{"x", "a", "b"}, true},
		{"x\x00y", []string{"x"}, true},
	}
	for _, tt := range tests {
		got, ok := server.SplitConfigArgs(tt.line)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("SplitConfigArgs(%q) = %q, %v; want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// writeFiles writes name → content under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadConfigFile(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // main.conf is read; @ is the directory
		options [][]string
		check   func(t *testing.T, c server.Config)
	}{
		{"plain", map[string]string{"main.conf": "# comment\n\nport 7000\nmaxclients 50\r\nrequirepass \"s3 cret\"\n  appendonly no\nappendfsync ALWAYS\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Port != 7000 || c.MaxClients != 50 || c.RequirePass != "s3 cret" || c.AppendOnly || c.AppendFsync != "always" {
					t.Errorf("got %+v", c)
				}
			}},
		{"last wins", map[string]string{"main.conf": "port 1\nPORT 2\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Port != 2 {
					t.Errorf("port %d", c.Port)
				}
			}},
		{"save accumulates, first replaces the default", map[string]string{"main.conf": "save 900 1\nsave 300 10\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Save != "900 1 300 10" {
					t.Errorf("save %q", c.Save)
				}
			}},
		{"save empty clears", map[string]string{"main.conf": "save 900 1\nsave \"\"\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Save != "" {
					t.Errorf("save %q", c.Save)
				}
			}},
		{"save one quoted argument", map[string]string{"main.conf": "save \"900 1 60 5\"\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Save != "900 1 60 5" {
					t.Errorf("save %q", c.Save)
				}
			}},
		{"output buffer classes merge", map[string]string{"main.conf": "client-output-buffer-limit normal 1mb 2mb 3\nclient-output-buffer-limit pubsub 64mb 16mb 90\n"},
			nil, func(t *testing.T, c server.Config) {
				want := "normal 1048576 2097152 3 slave 268435456 67108864 60 pubsub 67108864 16777216 90"
				if got := c.Params["client-output-buffer-limit"]; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			}},
		{"aliases and units", map[string]string{"main.conf": "hash-max-ziplist-entries 64\nproto-max-bulk-len 2mb\nslave-read-only no\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Params["hash-max-listpack-entries"] != "64" || c.Params["proto-max-bulk-len"] != "2097152" || c.Params["replica-read-only"] != "no" {
					t.Errorf("params %v", c.Params)
				}
			}},
		{"include nested and glob", map[string]string{
			"main.conf":     "port 1\ninclude @/a.conf\ninclude @/conf.d/*.conf\ninclude @/none/*.conf\n",
			"a.conf":        "port 2\ninclude @/b.conf\n",
			"b.conf":        "maxclients 7\n",
			"conf.d/1.conf": "timeout 5\n",
			"conf.d/2.conf": "timeout 6\nport 3\n",
		}, nil, func(t *testing.T, c server.Config) {
			if c.Port != 3 || c.MaxClients != 7 || c.Params["timeout"] != "6" {
				t.Errorf("got port %d maxclients %d params %v", c.Port, c.MaxClients, c.Params)
			}
		}},
		{"options after the file", map[string]string{"main.conf": "port 1\ntimeout 9\n"},
			[][]string{{"port", "2"}, {"save", ""}, {"tcp-keepalive", "60"}}, func(t *testing.T, c server.Config) {
				if c.Port != 2 || c.Save != "" || c.Params["tcp-keepalive"] != "60" || c.Params["timeout"] != "9" {
					t.Errorf("got %+v", c)
				}
			}},
		{"bind keeps the first address", map[string]string{"main.conf": "bind 127.0.0.1 -::1\n"},
			nil, func(t *testing.T, c server.Config) {
				if c.Bind != "127.0.0.1" {
					t.Errorf("bind %q", c.Bind)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, nil)
			files := map[string]string{}
			for k, v := range tt.files {
				files[k] = strings.ReplaceAll(v, "@", dir)
			}
			for name, content := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := server.DefaultConfig()
			main := filepath.Join(dir, "main.conf")
			if err := server.LoadConfigFile(&cfg, main, tt.options); err != nil {
				t.Fatal(err)
			}
			if cfg.ConfigFile != main {
				t.Errorf("ConfigFile %q", cfg.ConfigFile)
			}
			tt.check(t, cfg)
		})
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		options [][]string
		file    string // "" for the command line
		line    int
		text    string
		reason  string
	}{
		{"unknown directive", map[string]string{"main.conf": "port 1\n\nfoo bar\n"}, nil,
			"main.conf", 3, "foo bar", "Bad directive or wrong number of arguments"},
		{"bad integer", map[string]string{"main.conf": "port abc\n"}, nil,
			"main.conf", 1, "port abc", "argument couldn't be parsed into an integer"},
		{"out of range", map[string]string{"main.conf": "port 70000\n"}, nil,
			"main.conf", 1, "port 70000", "argument must be between 0 and 65535 inclusive"},
		{"too many arguments", map[string]string{"main.conf": "port 1 2\n"}, nil,
			"main.conf", 1, "port 1 2", "wrong number of arguments"},
		{"trailing comment is an argument", map[string]string{"main.conf": "timeout 10 # x\n"}, nil,
			"main.conf", 1, "timeout 10 # x", "wrong number of arguments"},
		{"bad bool", map[string]string{"main.conf": "appendonly maybe\n"}, nil,
			"main.conf", 1, "appendonly maybe", "argument must be 'yes' or 'no'"},
		{"bad save", map[string]string{"main.conf": "save 900\n"}, nil,
			"main.conf", 1, "save 900", "Invalid save parameters"},
		{"bad second save", map[string]string{"main.conf": "save 900 1\nsave 1\n"}, nil,
			"main.conf", 2, "save 1", "Invalid save parameters"},
		{"unbalanced quotes", map[string]string{"main.conf": "port \"7000\n"}, nil,
			"main.conf", 1, "port \"7000", "Unbalanced quotes in configuration line"},
		{"missing dir", map[string]string{"main.conf": "dir @/nope\n"}, nil,
			"main.conf", 1, "dir @/nope", "No such file or directory"},
		{"output buffer class", map[string]string{"main.conf": "client-output-buffer-limit normal 1 2\n"}, nil,
			"main.conf", 1, "client-output-buffer-limit normal 1 2", "Wrong number of arguments in buffer limit configuration."},
		{"in an included file", map[string]string{"main.conf": "include @/inc.conf\n", "inc.conf": "\ntimeout abc\n"}, nil,
			"inc.conf", 2, "timeout abc", "argument couldn't be parsed into an integer"},
		{"include loop", map[string]string{"main.conf": "include @/a.conf\n", "a.conf": "port 1\ninclude @/main.conf\n"}, nil,
			"a.conf", 2, "include @/main.conf", "Include loop: @/main.conf includes @/a.conf includes @/main.conf"},
		{"self include", map[string]string{"main.conf": "include @/main.conf\n"}, nil,
			"main.conf", 1, "include @/main.conf", "Include loop: @/main.conf includes @/main.conf"},
		{"include arity", map[string]string{"main.conf": "include a b\n"}, nil,
			"main.conf", 1, "include a b", "Bad directive or wrong number of arguments"},
		{"not a parameter of ours", map[string]string{"main.conf": "rename-command FLUSHALL \"\"\n"}, nil,
			"main.conf", 1, "rename-command FLUSHALL \"\"", "recached does not support the rename-command directive"},
		{"command line", map[string]string{"main.conf": "port 1\n"}, [][]string{{"timeout", "1"}, {"maxclients", "x y"}},
			"", 2, `maxclients "x y"`, "argument couldn't be parsed into an integer"},
		{"command line unknown", map[string]string{"main.conf": ""}, [][]string{{"foo", "1"}},
			"", 1, `foo "1"`, "Bad directive or wrong number of arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(content, "@", dir)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := server.DefaultConfig()
			err := server.LoadConfigFile(&cfg, filepath.Join(dir, "main.conf"), tt.options)
			var ce *server.ConfigFileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a ConfigFileError", err)
			}
			file := ""
			if tt.file != "" {
				file = filepath.Join(dir, tt.file)
			}
			text := strings.ReplaceAll(tt.text, "@", dir)
			reason := strings.ReplaceAll(tt.reason, "@", dir)
			if ce.File != file || ce.Line != tt.line || ce.Text != text || ce.Reason != reason {
				t.Errorf("got %q line %d %q %q; want %q line %d %q %q", ce.File, ce.Line, ce.Text, ce.Reason, file, tt.line, text, reason)
			}
			msg := err.Error()
			for _, want := range []string{"*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n", "Reading the configuration file, at line ", "\n>>> '" + text + "'\n" + reason} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}

func TestLoadConfigFileMissing(t *testing.T) {
	cfg := server.DefaultConfig()
	p := filepath.Join(t.TempDir(), "none.conf")
	err := server.LoadConfigFile(&cfg, p, nil)
	want := "Fatal error, can't open config file '" + p + "': No such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// FuzzSplitConfigArgs checks that every line splits without a panic and
// that what it splits into, quoted as CONFIG REWRITE quotes it, splits back
// into the same arguments.
func FuzzSplitConfigArgs(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/conffile/*.conf")
	seeds = append(seeds, "../cmd/recached/testdata/redis.conf")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			f.Add(line)
		}
	}
	f.Add(`x "a\x41" 'b\'c' "unterminated`)
	f.Fuzz(func(t *testing.T, line string) {
		args, ok := server.SplitConfigArgs(line)
		if !ok {
			return
		}
		again, ok := server.SplitConfigArgs(server.QuoteConfigLine(args))
		if !ok || !slices.Equal(args, again) {
			t.Fatalf("%q split into %q, quoted back into %q", line, args, again)
		}
	})
}

// FuzzLoadConfigFile checks that any file content loads or fails with a
// ConfigFileError, never a panic.
func FuzzLoadConfigFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/conffile/*.conf")
	seeds = append(seeds, "../cmd/recached/testdata/redis.conf")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	dir := f.TempDir()
	p := filepath.Join(dir, "fuzz.conf")
	f.Fuzz(func(t *testing.T, content string) {
		if strings.Contains(content, "include") || strings.Contains(content, "dir") {
			return // no reading or checking of the machine's files
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := server.DefaultConfig()
		err := server.LoadConfigFile(&cfg, p, nil)
		var ce *server.ConfigFileError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("%q: %v is not a ConfigFileError", content, err)
		}
	})
}
