// Business IDs (NextBusiness) against two real snowidd nodes that share one
// SQLite segment store and a tokens file, and against a hostile stand-in
// for a node (httptest, in this process: tests/support/hostile_node.py
// answers only /v1/ids and /v1/segment) whose every bad answer is refused,
// counted and named by endpoint while the call goes to the next endpoint.
package snowid_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"snowid.io/snowid"
)

const businessTokens = `[[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["go-orders", "go retired", "go-never"]
`

var wellFormed = regexp.MustCompile(`^ORD-\d{8}-\d{6}$`)

// businessNodes starts two nodes sharing a store, creates tag "go-orders"
// (and "go retired", then retires it) and returns the nodes' URLs.
func businessNodes(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.toml")
	if err := os.WriteFile(tokens, []byte(businessTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--segment-store", "sqlite://" + filepath.Join(dir, "segments.db"),
		"--tokens-file", tokens}
	a, b := startNode(t, 2, 5, flags...), startNode(t, 2, 6, flags...)
	for _, tag := range []string{"go-orders", "go retired"} {
		administer(t, http.MethodPost, a.URL+"/v1/tags", fmt.Sprintf(
			`{"tag": %q, "step": 100, "template": "ORD-{yyyyMMdd}-{seq:06}", "zone": "UTC"}`, tag))
	}
	administer(t, http.MethodDelete, a.URL+"/v1/tags/go%20retired", "")
	return []string{a.URL, b.URL}
}

func administer(t *testing.T, method, url, body string) {
	t.Helper()
	request, _ := http.NewRequest(method, url, strings.NewReader(body))
	request.Header.Set("Authorization", "Bearer ops-secret")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	response.Body.Close()
	if response.StatusCode/100 != 2 {
		t.Fatalf("%s %s: HTTP %d", method, url, response.StatusCode)
	}
}

func TestBusinessIDsAgainstNodes(t *testing.T) {
	urls := businessNodes(t)
	ctx := context.Background()
	client := openClient(t, snowid.Options{Endpoints: urls, BearerToken: "orders-secret"})

	t.Run("WellFormedAndNeverRepeated", func(t *testing.T) {
		seen := map[string]bool{}
		for _, count := range []int{1, 7, 50, 1, 100} {
			ids, err := client.NextBusiness(ctx, "go-orders", count)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != count {
				t.Fatalf("%d IDs, asked for %d", len(ids), count)
			}
			for _, id := range ids {
				if !wellFormed.MatchString(id) || seen[id] {
					t.Fatalf("ID %q: malformed or repeated", id)
				}
				seen[id] = true
			}
		}
	})
	t.Run("ARetiredTagIsAFailedPreconditionNamingIt", func(t *testing.T) {
		started := time.Now()
		_, err := client.NextBusiness(ctx, "go retired", 3)
		if !errors.Is(err, snowid.ErrFailedPrecondition) ||
			!strings.Contains(err.Error(), "'go retired' is retired") {
			t.Fatalf("got %v, want ErrFailedPrecondition naming the tag", err)
		}
		if time.Since(started) > time.Second {
			t.Fatal("a retired tag was asked of node after node")
		}
	})
	t.Run("AWrongTokenIsRefused", func(t *testing.T) {
		for _, token := range []string{"", "wrong"} {
			wrong := openClient(t, snowid.Options{Endpoints: urls, BearerToken: token})
			if _, err := wrong.NextBusiness(ctx, "go-orders", 2); !errors.Is(err, snowid.ErrRefused) {
				t.Fatalf("token %q: got %v, want ErrRefused", token, err)
			}
		}
	})
	t.Run("UnknownTagsAndBadArguments", func(t *testing.T) {
		if _, err := client.NextBusiness(ctx, "go-never", 1); !errors.Is(err, snowid.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
		for _, bad := range []struct {
			tag   string
			count int
		}{{"", 1}, {strings.Repeat("x", 129), 1}, {"go-orders", 0}} {
			_, err := client.NextBusiness(ctx, bad.tag, bad.count)
			if !errors.Is(err, snowid.ErrInvalidArgument) {
				t.Fatalf("%q, %d: got %v, want ErrInvalidArgument", bad.tag, bad.count, err)
			}
		}
	})
	t.Run("A503GoesToTheNextEndpoint", func(t *testing.T) {
		down := hostileBusinessNode(t, "unavailable")
		options := snowid.Options{Endpoints: []string{down.URL, urls[0]}, BearerToken: "orders-secret"}
		c := openClient(t, options)
		for i := 0; i < 50 && c.Stats().FailedCalls == 0; i++ { // each call draws
			if ids, err := c.NextBusiness(ctx, "go-orders", 2); err != nil || len(ids) != 2 {
				t.Fatalf("%v %v", ids, err)
			}
		}
		if stats := c.Stats(); stats.FailedCalls == 0 || stats.InvalidAnswers != 0 {
			t.Fatalf("stats %+v: the 503 was not met, or counted as invalid", stats)
		}
	})
}

// The business answers of the stand-in that no node could have sent.
var badBusinessModes = []string{"numbers", "too_few", "too_many", "duplicates", "blank",
	"control", "too_long", "other_tag", "extra_member", "single_id", "html", "wrong_type",
	"not_utf8"}

// hostileBusinessNode answers GET /v1/business/{tag}?count=N as mode says
// (and anything else 404).
func hostileBusinessNode(t *testing.T, mode string) *httptest.Server {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := strings.TrimPrefix(r.URL.Path, "/v1/business/")
		if tag == r.URL.Path {
			http.Error(w, `{"error": "not here"}`, http.StatusNotFound)
			return
		}
		count, _ := strconv.Atoi(r.URL.Query().Get("count"))
		ids := make([]any, count)
		for i := range ids {
			ids[i] = fmt.Sprintf("ORD-%06d", i+1)
		}
		answer := map[string]any{"tag": tag, "ids": ids}
		kind := "application/json"
		switch mode {
		case "numbers":
			ids[0] = 1
		case "too_few":
			answer["ids"] = ids[1:]
		case "too_many":
			answer["ids"] = append(ids, "ORD-X")
		case "duplicates":
			ids[len(ids)-1] = ids[0]
		case "blank":
			ids[0] = ""
		case "control":
			ids[0] = "ORD-\n1"
		case "too_long":
			ids[0] = strings.Repeat("O", 257)
		case "other_tag":
			answer["tag"] = tag + "-other"
		case "extra_member":
			answer["id"] = ids[0]
		case "single_id":
			answer = map[string]any{"tag": tag, "id": ids[0]}
		case "html", "wrong_type":
			kind = map[string]string{"html": "text/html", "wrong_type": "text/plain"}[mode]
		case "unavailable":
			w.Header().Set("Content-Type", kind)
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error": "the segment store is unreachable"}`))
			return
		}
		body, _ := json.Marshal(answer)
		if mode == "html" {
			body = []byte("<html><body>ORD-000001</body></html>")
		}
		if mode == "not_utf8" {
			body = []byte(fmt.Sprintf("{\"tag\": %q, \"ids\": [\"ORD-\xff\"]}", tag))
		}
		w.Header().Set("Content-Type", kind)
		w.Write(body)
	}))
	t.Cleanup(server.Close)
	return server
}

func TestEveryBadBusinessAnswerIsRefusedNamingTheNode(t *testing.T) {
	for _, mode := range badBusinessModes {
		mode := mode
		t.Run(mode, func(t *testing.T) {
			hostile := hostileBusinessNode(t, mode)
			client := openClient(t, snowid.Options{Endpoints: []string{hostile.URL}})
			count := 3
			if mode == "not_utf8" {
				count = 1
			}
			ids, err := client.NextBusiness(context.Background(), "orders", count)
			if !errors.Is(err, snowid.ErrUnavailable) || !strings.Contains(err.Error(), hostile.URL) {
				t.Fatalf("got %q, %v; want ErrUnavailable naming %s", ids, err, hostile.URL)
			}
			if n := client.Stats().InvalidAnswers; n != 1 {
				t.Fatalf("%d invalid answers counted, not 1", n)
			}
		})
	}
}

func TestTheValidBusinessAnswerOfTheStandInIsTaken(t *testing.T) {
	valid := hostileBusinessNode(t, "valid")
	client := openClient(t, snowid.Options{Endpoints: []string{valid.URL}})
	ids, err := client.NextBusiness(context.Background(), "a/b c", 3)
	if err != nil || strings.Join(ids, ",") != "ORD-000001,ORD-000002,ORD-000003" {
		t.Fatalf("got %q, %v", ids, err)
	}
}

func TestABadBusinessNodeIsBackedOffAndTheCallFailsOver(t *testing.T) {
	bad, good := hostileBusinessNode(t, "duplicates"), hostileBusinessNode(t, "valid")
	client := openClient(t, snowid.Options{Endpoints: []string{bad.URL, good.URL},
		BackoffInitial: 5 * time.Second, BackoffMax: 5 * time.Second})
	for i := 0; i < 20; i++ {
		if ids, err := client.NextBusiness(context.Background(), "orders", 2); err != nil ||
			len(ids) != 2 {
			t.Fatalf("call %d: %q, %v", i, ids, err)
		}
	}
	if n := client.Stats().InvalidAnswers; n > 1 {
		t.Fatalf("%d invalid answers: the bad node was not backed off", n)
	}
}
