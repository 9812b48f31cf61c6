package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type upper string

func (u *upper) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty")
	}
	*u = upper(strings.ToUpper(string(b)))
	return nil
}

type nested struct {
	Relaxed bool `env:"QIM_T_RELAXED" doc:"accept relaxed durability"`
}

type testConfig struct {
	Addr     string        `env:"QIM_T_ADDR" required:"true" doc:"address"`
	Listen   string        `env:"QIM_T_LISTEN" doc:"listen address"`
	Batch    int           `env:"QIM_T_BATCH" unit:"sends" doc:"batch size"`
	Region   uint16        `env:"QIM_T_REGION" doc:"region id"`
	ID       *uint16       `env:"QIM_T_ID" doc:"fixed id; unset = claim one"`
	Interval time.Duration `env:"QIM_T_INTERVAL" doc:"interval"`
	Timeout  time.Duration `env:"QIM_T_TIMEOUT" default:"2 × interval" doc:"timeout"`
	Brokers  []string      `env:"QIM_T_BROKERS" doc:"brokers"`
	Ratio    float64       `env:"QIM_T_RATIO" doc:"ratio"`
	Key      upper         `env:"QIM_T_KEY" secret:"true" doc:"signing key"`
	nested
	Dev dev
}

type dev struct {
	Verbose bool `env:"QIM_T_VERBOSE" doc:"log more"`
}

func defaults() testConfig {
	return testConfig{Listen: "127.0.0.1:1", Batch: 256, Interval: 2 * time.Second}
}

func env(kv ...string) Lookup {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

func TestLoad(t *testing.T) {
	id := uint16(0)
	for _, tc := range []struct {
		name    string
		env     Lookup
		check   func(testConfig) bool
		wantVar string
		wantErr error
	}{
		{"defaults", env(), func(c testConfig) bool { return c.Batch == 256 && c.Interval == 2*time.Second && c.ID == nil }, "", nil},
		{"values", env("QIM_T_ADDR", "a:1", "QIM_T_BATCH", "12", "QIM_T_INTERVAL", "150ms", "QIM_T_BROKERS", "a:1, b:2",
			"QIM_T_REGION", "7", "QIM_T_RATIO", "0.5", "QIM_T_KEY", "abc", "QIM_T_RELAXED", "true", "QIM_T_VERBOSE", "1"),
			func(c testConfig) bool {
				return c.Addr == "a:1" && c.Batch == 12 && c.Interval == 150*time.Millisecond && len(c.Brokers) == 2 &&
					c.Brokers[1] == "b:2" && c.Region == 7 && c.Ratio == 0.5 && c.Key == "ABC" && c.Relaxed && c.Dev.Verbose
			}, "", nil},
		{"pointer keeps an explicit zero", env("QIM_T_ID", "0"), func(c testConfig) bool { return c.ID != nil && *c.ID == id }, "", nil},
		{"garbage int", env("QIM_T_BATCH", "garbage"), nil, "QIM_T_BATCH", ErrMalformed},
		{"milliseconds are not a duration", env("QIM_T_INTERVAL", "150"), nil, "QIM_T_INTERVAL", ErrMalformed},
		{"bool typo", env("QIM_T_RELAXED", "yes"), nil, "QIM_T_RELAXED", ErrMalformed},
		{"overflow", env("QIM_T_REGION", "70000"), nil, "QIM_T_REGION", ErrMalformed},
		{"negative unsigned", env("QIM_T_REGION", "-1"), nil, "QIM_T_REGION", ErrMalformed},
		{"empty list element", env("QIM_T_BROKERS", "a:1,,b:2"), nil, "QIM_T_BROKERS", ErrMalformed},
		{"zero over a non-zero default", env("QIM_T_BATCH", "0"), nil, "QIM_T_BATCH", ErrZero},
		{"zero duration over a default", env("QIM_T_INTERVAL", "0s"), nil, "QIM_T_INTERVAL", ErrZero},
		{"text unmarshaler error", env("QIM_T_KEY", ""), nil, "QIM_T_KEY", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(defaults(), tc.env)
			var ce *Error
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.wantErr != nil && (!errors.As(err, &ce) || ce.Var != tc.wantVar || !errors.Is(err, tc.wantErr)):
				t.Fatalf("Load error %v, want %v naming %s", err, tc.wantErr, tc.wantVar)
			case tc.check != nil && !tc.check(c):
				t.Fatalf("Load = %+v", c)
			}
		})
	}
}

func TestSecretValueNeverInErrors(t *testing.T) {
	_, err := Load(defaults(), env("QIM_T_KEY", ""))
	if err == nil || strings.Contains(err.Error(), `=""`) {
		t.Fatalf("error %v", err)
	}
	type withSecret struct {
		N   int    `env:"QIM_T_N" doc:"n"`
		Key string `env:"QIM_T_SECRET" secret:"true" doc:"k"`
	}
	_, err = Load(withSecret{N: 1}, env("QIM_T_SECRET", "hunter2-secret", "QIM_T_N", "0"))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

func TestApplyFillsDefaultsAndRequires(t *testing.T) {
	c := testConfig{Batch: 3}
	err := Apply(&c, defaults())
	var ce *Error
	if !errors.As(err, &ce) || ce.Var != "QIM_T_ADDR" || !errors.Is(err, ErrRequired) {
		t.Fatalf("Apply without the required address: %v", err)
	}
	c.Addr = "a:1"
	if err := Apply(&c, defaults()); err != nil || c.Batch != 3 || c.Listen != "127.0.0.1:1" || c.Interval != 2*time.Second {
		t.Fatalf("Apply = %+v, %v", c, err)
	}
}

func TestDescribe(t *testing.T) {
	vars, err := Describe(defaults())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Var{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	for name, want := range map[string]Var{
		"QIM_T_ADDR":     {Type: "string", Required: true},
		"QIM_T_BATCH":    {Type: "int", Default: "256", Unit: "sends"},
		"QIM_T_INTERVAL": {Type: "duration", Default: "2s"},
		"QIM_T_TIMEOUT":  {Type: "duration", Default: "2 × interval"},
		"QIM_T_ID":       {Type: "uint"},
		"QIM_T_BROKERS":  {Type: "list"},
		"QIM_T_KEY":      {Type: "secret", Secret: true},
		"QIM_T_RELAXED":  {Type: "bool", Default: "false"},
		"QIM_T_REGION":   {Type: "uint", Default: "0"},
		"QIM_T_LISTEN":   {Type: "string", Default: "127.0.0.1:1"},
		"QIM_T_RATIO":    {Type: "float", Default: "0"},
	} {
		got := byName[name]
		if got.Type != want.Type || got.Default != want.Default || got.Unit != want.Unit || got.Required != want.Required ||
			got.Secret != want.Secret || got.Doc == "" {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
	if len(vars) != 13 { // the embedded and the named nested struct add one each, QIM_T_KEY its _FILE
		t.Errorf("%d vars", len(vars))
	}
}

func TestDeclarationErrors(t *testing.T) {
	type noTag struct{ X int }
	type trueBool struct {
		B bool `env:"QIM_T_B" doc:"b"`
	}
	type noDoc struct {
		X int `env:"QIM_T_X"`
	}
	type badType struct {
		M map[string]int `env:"QIM_T_M" doc:"m"`
	}
	if _, err := Describe(noTag{}); err == nil {
		t.Error("field without env tag accepted")
	}
	if _, err := Describe(trueBool{B: true}); err == nil {
		t.Error("bool defaulting to true accepted")
	}
	if _, err := Describe(noDoc{}); err == nil {
		t.Error("variable without doc accepted")
	}
	if _, err := Describe(badType{}); err == nil {
		t.Error("map field accepted")
	}
	type twice struct {
		A int `env:"QIM_T_A" doc:"a"`
		B int `env:"QIM_T_A" doc:"b"`
	}
	if _, err := Describe(twice{}); err == nil {
		t.Error("one variable on two fields accepted")
	}
}

func TestCheckEnviron(t *testing.T) {
	known := []Var{{Name: "QIM_WRITER_BATCH_MAX"}, {Name: "QIM_REDIS_ADDR"}}
	environ := []string{"PATH=/bin", "QIM_REDIS_ADDR=a:1", "QIM_WRITER_BACH_MAX=3", "QIM_HEARTBEAT_MS=100", "QIM_TOTALLY_ELSE=1"}
	err := CheckEnviron(environ, known, map[string]string{"QIM_HEARTBEAT_MS": "renamed to QIM_HEARTBEAT_INTERVAL"})
	var ue *UnknownError
	if !errors.As(err, &ue) || strings.Join(ue.Names, ",") != "QIM_HEARTBEAT_MS,QIM_TOTALLY_ELSE,QIM_WRITER_BACH_MAX" {
		t.Fatalf("CheckEnviron = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"did you mean QIM_WRITER_BATCH_MAX?", "renamed to QIM_HEARTBEAT_INTERVAL", "QIM_TOTALLY_ELSE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if err := CheckEnviron([]string{"QIM_REDIS_ADDR=x", "HOME=/"}, known, nil); err != nil {
		t.Errorf("known only: %v", err)
	}
}

func TestRender(t *testing.T) {
	vars, err := Describe(defaults())
	if err != nil {
		t.Fatal(err)
	}
	help, md := Help(vars), Markdown(vars)
	for _, want := range []string{"QIM_T_ADDR  (string, required)", "QIM_T_BATCH  (int, default 256, unit: sends)", "QIM_T_KEY  (secret, default unset)"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if !strings.Contains(md, "| `QIM_T_INTERVAL` | duration | `2s` | — | interval |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// Every missing required variable and every malformed value is named at once, on one line.
func TestAllProblemsAtOnce(t *testing.T) {
	type two struct {
		A string `env:"QIM_T_A" required:"true" doc:"a"`
		B string `env:"QIM_T_B" required:"true" doc:"b"`
		N int    `env:"QIM_T_N" doc:"n"`
		M int    `env:"QIM_T_M" doc:"m"`
	}
	var c two
	err := Apply(&c, two{})
	if err == nil || err.Error() != "QIM_T_A: is required; QIM_T_B: is required" || !errors.Is(err, ErrRequired) {
		t.Fatalf("Apply = %v", err)
	}
	_, err = Load(two{}, env("QIM_T_N", "x", "QIM_T_M", "y"))
	var ce *Error
	if err == nil || !strings.Contains(err.Error(), "QIM_T_N=") || !strings.Contains(err.Error(), "; QIM_T_M=") ||
		!errors.As(err, &ce) || ce.Var != "QIM_T_N" || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Load = %v", err)
	}
}
