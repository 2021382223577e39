// Options: the defaults, and each bad option refused by Open with
// ErrInvalidArgument and its name. No node is needed.
package snowid_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"snowid.io/snowid"
)

func TestDefaultsMatchTheCppClientButMaxBatch(t *testing.T) {
	d := snowid.DefaultOptions()
	want := snowid.Options{
		CallDeadline: 500 * time.Millisecond, EmptyWait: 200 * time.Millisecond,
		StartWait: 2 * time.Second, LowWater: 0.5,
		InitialBatch: 1000, MaxBatch: 10000, RefillPeriod: 500 * time.Millisecond,
		MaxAge: 10 * time.Second, BackoffInitial: 100 * time.Millisecond,
		BackoffMax: 5 * time.Second,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("DefaultOptions() = %+v, want %+v", d, want)
	}
}

// endpointsWithDefaults: DefaultOptions() with Endpoints set.
func endpointsWithDefaults(endpoints ...string) snowid.Options {
	options := snowid.DefaultOptions()
	options.Endpoints = endpoints
	return options
}

func TestDefaultsWithEndpointsAreValid(t *testing.T) {
	for _, endpoint := range []string{"http://127.0.0.1:8080", "http://localhost:1/",
		"https://ids.example:443", "http://[::1]:8080"} {
		if err := endpointsWithDefaults(endpoint).Validate(); err != nil {
			t.Errorf("%s: %v", endpoint, err)
		}
	}
}

// Zero is a value: a zero EmptyWait (do not wait) and a zero StartWait (no
// allowance at start) are valid.
func TestZeroWaitsAreValid(t *testing.T) {
	options := endpointsWithDefaults("http://h:1")
	options.EmptyWait, options.StartWait = 0, 0
	if err := options.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A literal Options{Endpoints: ...} leaves CallDeadline at zero: refused,
// naming it and where the defaults are, never taken as "no deadline" or
// "do not wait" in silence.
func TestALiteralWithoutTheDefaultsIsRefusedByName(t *testing.T) {
	err := (snowid.Options{Endpoints: []string{"http://h:1"}}).Validate()
	if !errors.Is(err, snowid.ErrInvalidArgument) || !strings.Contains(err.Error(),
		"CallDeadline") || !strings.Contains(err.Error(), "snowid.DefaultOptions()") {
		t.Fatalf("%v, want ErrInvalidArgument naming CallDeadline and DefaultOptions", err)
	}
}

func TestOpenRefusesEachBadOptionByName(t *testing.T) {
	ok := []string{"http://127.0.0.1:8080"}
	// with: DefaultOptions, then change sets what a case tests.
	with := func(change func(*snowid.Options)) snowid.Options {
		options := endpointsWithDefaults(ok...)
		change(&options)
		return options
	}
	cases := []struct {
		name    string
		options snowid.Options
	}{
		{"Endpoints", snowid.DefaultOptions()},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"127.0.0.1:8080"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"ftp://h:21"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:0"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:70000"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:80/v1"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:80?x=1"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:80?"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://h:80#"} })},
		{"Endpoints", with(func(o *snowid.Options) { o.Endpoints = []string{"http://u:p@h:80"} })},
		{"Agent", with(func(o *snowid.Options) { o.Agent = "9lives" })},
		{"Agent", with(func(o *snowid.Options) { o.Agent = "a_b" })},
		{"Agent", with(func(o *snowid.Options) { o.Agent = "a" + strings.Repeat("b", 64) })},
		{"BearerToken", with(func(o *snowid.Options) { o.BearerToken = "a\nb" })},
		{"CallDeadline", with(func(o *snowid.Options) { o.CallDeadline = -time.Millisecond })},
		{"LowWater", with(func(o *snowid.Options) { o.LowWater = 1.5 })},
		{"LowWater", with(func(o *snowid.Options) { o.LowWater = -0.1 })},
		{"InitialBatch", with(func(o *snowid.Options) { o.InitialBatch = -1 })},
		{"MaxBatch", with(func(o *snowid.Options) { o.InitialBatch = 100; o.MaxBatch = 99 })},
		{"MaxBatch", with(func(o *snowid.Options) { o.MaxBatch = 1_000_001 })},
		{"RefillPeriod", with(func(o *snowid.Options) { o.RefillPeriod = -time.Second })},
		{"RefillPeriod", with(func(o *snowid.Options) { o.RefillPeriod = 0 })},
		{"EmptyWait", with(func(o *snowid.Options) { o.EmptyWait = -time.Millisecond })},
		{"StartWait", with(func(o *snowid.Options) { o.StartWait = -time.Second })},
		{"CallDeadline", with(func(o *snowid.Options) { o.CallDeadline = 0 })},
		{"MaxAge", with(func(o *snowid.Options) { o.MaxAge = 0 })},
		{"LowWater", with(func(o *snowid.Options) { o.LowWater = 0 })},
		{"InitialBatch", with(func(o *snowid.Options) { o.InitialBatch = 0 })},
		{"MaxAge", with(func(o *snowid.Options) { o.MaxAge = 9 * time.Millisecond })},
		{"BackoffInitial", with(func(o *snowid.Options) { o.BackoffInitial = -1 })},
		{"BackoffMax", with(func(o *snowid.Options) {
			o.BackoffInitial, o.BackoffMax = time.Second, time.Millisecond
		})},
	}
	for _, c := range cases {
		client, err := snowid.Open(c.options)
		if err == nil {
			client.Close()
			t.Errorf("%+v: Open succeeded, want an error naming %s", c.options, c.name)
			continue
		}
		if !errors.Is(err, snowid.ErrInvalidArgument) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%+v: %v, want ErrInvalidArgument naming %s", c.options, err, c.name)
		}
	}
}

func TestAgentsOfTheServersRuleAreAccepted(t *testing.T) {
	for _, agent := range []string{"a", "billing", "Billing-2", "a" + strings.Repeat("b", 63)} {
		options := endpointsWithDefaults("http://h:1")
		options.Agent = agent
		if err := options.Validate(); err != nil {
			t.Errorf("%q: %v", agent, err)
		}
	}
}
