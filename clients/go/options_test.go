// Options: the defaults a zero field takes, and each bad option refused by
// Open with ErrInvalidArgument and its name. No node is needed.
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
		CallDeadline: 500 * time.Millisecond, EmptyWait: 200 * time.Millisecond, LowWater: 0.5,
		InitialBatch: 1000, MaxBatch: 10000, RefillPeriod: 500 * time.Millisecond,
		MaxAge: 10 * time.Second, BackoffInitial: 100 * time.Millisecond,
		BackoffMax: 5 * time.Second,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("DefaultOptions() = %+v, want %+v", d, want)
	}
}

func TestZeroOptionsBesideEndpointsAreValid(t *testing.T) {
	for _, endpoint := range []string{"http://127.0.0.1:8080", "http://localhost:1/",
		"https://ids.example:443", "http://[::1]:8080"} {
		if err := (snowid.Options{Endpoints: []string{endpoint}}).Validate(); err != nil {
			t.Errorf("%s: %v", endpoint, err)
		}
	}
	// An InitialBatch above the default MaxBatch raises the default with it.
	if err := (snowid.Options{Endpoints: []string{"http://h:1"}, InitialBatch: 50000}).
		Validate(); err != nil {
		t.Error(err)
	}
}

func TestOpenRefusesEachBadOptionByName(t *testing.T) {
	ok := []string{"http://127.0.0.1:8080"}
	cases := []struct {
		name    string
		options snowid.Options
	}{
		{"Endpoints", snowid.Options{}},
		{"Endpoints", snowid.Options{Endpoints: []string{"127.0.0.1:8080"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"ftp://h:21"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://h"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://h:0"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://h:70000"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://h:80/v1"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://h:80?x=1"}}},
		{"Endpoints", snowid.Options{Endpoints: []string{"http://u:p@h:80"}}},
		{"Agent", snowid.Options{Endpoints: ok, Agent: "9lives"}},
		{"Agent", snowid.Options{Endpoints: ok, Agent: "a_b"}},
		{"Agent", snowid.Options{Endpoints: ok, Agent: "a" + strings.Repeat("b", 64)}},
		{"BearerToken", snowid.Options{Endpoints: ok, BearerToken: "a\nb"}},
		{"CallDeadline", snowid.Options{Endpoints: ok, CallDeadline: -time.Millisecond}},
		{"LowWater", snowid.Options{Endpoints: ok, LowWater: 1.5}},
		{"LowWater", snowid.Options{Endpoints: ok, LowWater: -0.1}},
		{"InitialBatch", snowid.Options{Endpoints: ok, InitialBatch: -1}},
		{"MaxBatch", snowid.Options{Endpoints: ok, InitialBatch: 100, MaxBatch: 99}},
		{"MaxBatch", snowid.Options{Endpoints: ok, MaxBatch: 1_000_001}},
		{"RefillPeriod", snowid.Options{Endpoints: ok, RefillPeriod: -time.Second}},
		{"MaxAge", snowid.Options{Endpoints: ok, MaxAge: 9 * time.Millisecond}},
		{"BackoffInitial", snowid.Options{Endpoints: ok, BackoffInitial: -1}},
		{"BackoffMax", snowid.Options{Endpoints: ok, BackoffInitial: time.Second,
			BackoffMax: time.Millisecond}},
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
		options := snowid.Options{Endpoints: []string{"http://h:1"}, Agent: agent}
		if err := options.Validate(); err != nil {
			t.Errorf("%q: %v", agent, err)
		}
	}
}
