// The client against tests/support/hostile_node.py, the hostile stand-in
// for a node that every client is tested against: whatever a node or a
// proxy sends, the client hands out only what docs/clients.md ("What a
// client accepts") lets it take, counts the rest as invalid answers and
// moves on to the next endpoint.
package snowid_test

import (
	"bufio"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"snowid.io/snowid"
)

// The first ID of hostile_node.py's valid sequence.
const firstValidID = 1_000_000

// The modes of hostile_node.py whose every batch a client must refuse.
var badModes = []string{"duplicates", "padded", "hex", "blank", "floats", "numbers",
	"negative", "at_2_63", "at_2_64", "leading_zeros", "plus_sign", "underscores",
	"unicode_digits", "too_many", "descending", "truncated_json", "html", "slow_body",
	"endless_body", "huge_body"}

// The modes whose fault is one of the JSON text: asked with format=binary
// they answer that JSON (as a proxy that dropped the parameter would),
// which a client refuses as the wrong Content-Type; asked in JSON they show
// the text rules at work.
var textModes = map[string]bool{"padded": true, "hex": true, "blank": true, "floats": true,
	"numbers": true, "at_2_64": true, "leading_zeros": true, "plus_sign": true,
	"underscores": true, "unicode_digits": true}

// Each way a client asks: in binary (the default) and in JSON (a node that
// refused format=binary).
var forms = []struct {
	name  string
	apply func(snowid.Options) snowid.Options
}{
	{"binary", func(o snowid.Options) snowid.Options { return o }},
	{"json", snowid.AskInJSON},
}

// hostileNode: one hostile_node.py process.
type hostileNode struct {
	URL string
	cmd *exec.Cmd
}

var python struct {
	once sync.Once
	path string
}

// pythonPath: the interpreter `python3` names on the PATH, resolved once (a
// version manager's shim can take most of a second per start).
func pythonPath() string {
	python.once.Do(func() {
		python.path = "python3"
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		if path := strings.TrimSpace(string(out)); err == nil && path != "" {
			python.path = path
		}
	})
	return python.path
}

// startHostile runs hostile_node.py in `mode` and reads its port; it is
// stopped by its pid (SIGTERM, then SIGKILL) when the test ends, and on its
// own after five minutes.
func startHostile(t *testing.T, mode string) *hostileNode {
	t.Helper()
	cmd := exec.Command(pythonPath(), "../../tests/support/hostile_node.py", mode,
		"--lifetime", "300")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	port, err := bufio.NewReader(out).ReadString('\n')
	go func() {
		cmd.Wait()
		close(exited)
	}()
	if _, bad := strconv.Atoi(strings.TrimSpace(port)); err != nil || bad != nil {
		t.Fatalf("hostile_node.py %s did not start: %q %v", mode, port, err)
	}
	return &hostileNode{URL: "http://127.0.0.1:" + strings.TrimSpace(port), cmd: cmd}
}

// asked: how many batches the node was asked for so far (GET
// /hostile/stats, "id_requests").
func (h *hostileNode) asked(t *testing.T) int64 {
	t.Helper()
	var stats struct {
		IDRequests int64 `json:"id_requests"`
	}
	getJSON(t, h.URL+"/hostile/stats", &stats)
	return stats.IDRequests
}

// requireAsked fails the test unless the node was asked for at least
// `batches` batches since it started.
func (h *hostileNode) requireAsked(t *testing.T, batches int64) {
	t.Helper()
	if asked := h.asked(t); asked < batches {
		t.Fatalf("the hostile node was asked for %d batches, not %d", asked, batches)
	}
}

// hostileOptions: small batches, so that a few hundred IDs take several
// refills, and short backoffs.
func hostileOptions(endpoints ...string) snowid.Options {
	return snowid.Options{
		Endpoints:      endpoints,
		InitialBatch:   100,
		BackoffInitial: 50 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		CallDeadline:   500 * time.Millisecond,
		EmptyWait:      5 * time.Second,
	}
}

func draw(t *testing.T, client *snowid.Client, count int) []int64 {
	t.Helper()
	ids := make([]int64, count)
	for i := range ids {
		id, err := client.Next()
		if err != nil {
			t.Fatalf("after %d IDs: %v (%+v)", i, err, client.Stats())
		}
		ids[i] = id
	}
	return ids
}

// requireFromTheValidSequence: what the valid node gives one buffer,
// strictly increasing from its first ID up (below 2^63 as every int64 that
// is not negative).
func requireFromTheValidSequence(t *testing.T, ids []int64) {
	t.Helper()
	for i, id := range ids {
		if id < firstValidID || (i > 0 && id <= ids[i-1]) {
			t.Fatalf("ID %d at %d of %v", id, i, ids)
		}
	}
}

// requireUnavailable: Next hands out nothing and fails with ErrUnavailable
// within emptyWait (and 300 ms for a loaded machine).
func requireUnavailable(t *testing.T, client *snowid.Client, emptyWait time.Duration) {
	t.Helper()
	began := time.Now()
	id, err := client.Next()
	if took := time.Since(began); !errors.Is(err, snowid.ErrUnavailable) ||
		took > emptyWait+300*time.Millisecond {
		t.Fatalf("Next = %d, %v after %v; want ErrUnavailable within %v", id, err, took, emptyWait)
	}
}

// requireInvalidAnswer fails the test unless the client counts an invalid
// answer within 5 s: the refill goroutine counts it when the call ends,
// which may come just after a caller gave up waiting.
func requireInvalidAnswer(t *testing.T, client *snowid.Client) {
	t.Helper()
	for began := time.Now(); client.Stats().InvalidAnswers == 0 &&
		time.Since(began) < 5*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	if stats := client.Stats(); stats.InvalidAnswers < 1 {
		t.Fatalf("%+v: no invalid answer counted", stats)
	}
}

// Every bad mode, each with one hostile node (a Python start costs about a
// second of CPU on the shared machine), two modes at a time (each mostly
// waits), in binary and in JSON:
//   - beside a valid node: the hostile one is asked (each refill goes to
//     one of the two drawn at random, and an empty buffer asks both); its
//     batch is discarded and counted, and three batches' worth of IDs all
//     come from the valid node;
//   - alone: nothing is handed out, Next fails within EmptyWait, and an
//     invalid answer is counted. In JSON only for the modes whose fault is
//     in the text (the others answer JSON as they answer binary).
func TestEveryHostileModeIsRefused(t *testing.T) {
	valid := startHostile(t, "valid") // its IDs grow across the subtests
	for _, mode := range badModes {
		mode := mode
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			hostile := startHostile(t, mode)
			for _, form := range forms {
				t.Run(form.name+"/beside a valid node", func(t *testing.T) {
					asked := hostile.asked(t)
					client := openClient(t, form.apply(hostileOptions(hostile.URL, valid.URL)))
					requireFromTheValidSequence(t, draw(t, client, 300))
					requireInvalidAnswer(t, client)
					hostile.requireAsked(t, asked+1)
				})
				if form.name == "json" && !textModes[mode] {
					continue
				}
				t.Run(form.name+"/alone", func(t *testing.T) {
					asked := hostile.asked(t)
					options := hostileOptions(hostile.URL)
					options.CallDeadline = 300 * time.Millisecond
					options.EmptyWait, options.StartWait = 500*time.Millisecond, 500*time.Millisecond
					client := openClient(t, form.apply(options))
					requireUnavailable(t, client, options.EmptyWait)
					requireInvalidAnswer(t, client)
					hostile.requireAsked(t, asked+1)
				})
			}
		})
	}
}

// A node from before format=binary refuses it with 400: the client asks it
// in JSON at once and from then on, and its callers see no error.
func TestANodeThatRefusesBinaryIsAskedInJSON(t *testing.T) {
	old := startHostile(t, "old_node")
	options := hostileOptions(old.URL)
	options.EmptyWait, options.StartWait = 2*time.Second, 2*time.Second
	client := openClient(t, options)
	requireFromTheValidSequence(t, draw(t, client, 1000))
	stats := client.Stats()
	if stats.FailedCalls != 1 || stats.InvalidAnswers != 0 || stats.Calls < 3 {
		t.Fatalf("%+v: want one refused binary call, then JSON batches", stats)
	}
}

// A proxy in front of two nodes: every other batch is below the one before,
// but above the last one of its own issuer. Every batch is taken. (A
// deadline of seconds: a batch cut short by a loaded machine would count as
// an invalid answer too.)
func TestBatchesOfTwoIssuersInTurnAreAllTaken(t *testing.T) {
	proxy := startHostile(t, "two_issuers")
	options := hostileOptions(proxy.URL)
	options.CallDeadline = 5 * time.Second
	client := openClient(t, options)
	ids := draw(t, client, 1000) // four batches at least: 100, 200, 400, ...
	if stats := client.Stats(); stats.InvalidAnswers != 0 {
		t.Fatalf("%+v: a batch of one issuer was refused", stats)
	}
	proxy.requireAsked(t, 4)
	requireDistinct(t, ids)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if ids[len(ids)-1] < 5_000_000_000 {
		t.Fatal("no ID of the second issuer")
	}
}

// Each batch starts again at the first ID, with the same issuer: the first
// is taken, the second and every later one refused.
func TestABatchNotAboveItsIssuersLastIsRefused(t *testing.T) {
	behind := startHostile(t, "behind")
	options := hostileOptions(behind.URL)
	options.EmptyWait, options.StartWait = 600*time.Millisecond, 600*time.Millisecond
	client := openClient(t, options)
	first := draw(t, client, 100)
	requireFromTheValidSequence(t, first)
	if first[99] != firstValidID+99 {
		t.Fatalf("the first batch ends at %d", first[99])
	}
	requireUnavailable(t, client, options.EmptyWait)
	requireInvalidAnswer(t, client)
	behind.requireAsked(t, 2)
}

// A body sent a byte every 0.3 s: the call deadline covers the whole body,
// so the call fails (an invalid answer) at the deadline, not when the body
// ends 4 minutes later; a second endpoint serves meanwhile.
func TestASlowBodyIsLeftAtTheCallDeadline(t *testing.T) {
	slow, valid := startHostile(t, "slow_body"), startHostile(t, "valid")
	options := hostileOptions(slow.URL)
	client := openClient(t, options)
	began := time.Now()
	for client.Stats().InvalidAnswers == 0 && time.Since(began) < 5*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(began); took < options.CallDeadline ||
		took > options.CallDeadline+time.Second {
		t.Fatalf("the call failed after %v; the call deadline is %v", took, options.CallDeadline)
	}
	client = openClient(t, hostileOptions(slow.URL, valid.URL))
	began = time.Now()
	draw(t, client, 1)
	if took := time.Since(began); took > options.CallDeadline+time.Second {
		t.Fatalf("the first ID took %v with a valid endpoint beside the slow one", took)
	}
}

// An endless chunked body and one that says it is 300 MB: with a call
// deadline of 20 s only the body's bound can end the call soon, and what the
// process allocates meanwhile is far below what reading either would take.
func TestAnEndlessOrHugeBodyFailsAtOnceWithoutFillingMemory(t *testing.T) {
	for _, mode := range []string{"endless_body", "huge_body"} {
		t.Run(mode, func(t *testing.T) {
			hostile, valid := startHostile(t, mode), startHostile(t, "valid")
			options := hostileOptions(hostile.URL, valid.URL)
			options.CallDeadline = 20 * time.Second
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			began := time.Now()
			client := openClient(t, options)
			draw(t, client, 1)
			took := time.Since(began)
			runtime.ReadMemStats(&after)
			if allocated := after.TotalAlloc - before.TotalAlloc; took > 2*time.Second ||
				allocated > 64<<20 {
				t.Fatalf("the first ID took %v and %d bytes", took, allocated)
			}
			requireInvalidAnswer(t, client)
			hostile.requireAsked(t, 1)
		})
	}
}

// A node, or whatever answers in its place, that redirects elsewhere (302
// or 307, to a valid node) fails the call: the client never follows it, so
// that a batch comes from the endpoint asked or from none.
func TestARedirectIsAFailureOfTheNodeNeverFollowed(t *testing.T) {
	valid := startHostile(t, "valid")
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		status := status
		redirecting := httptest.NewServer(http.HandlerFunc(
			func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, valid.URL+r.URL.RequestURI(), status)
			}))
		t.Cleanup(redirecting.Close)
		options := hostileOptions(redirecting.URL)
		options.EmptyWait, options.StartWait = 300*time.Millisecond, 300*time.Millisecond
		client := openClient(t, options)
		requireUnavailable(t, client, options.EmptyWait)
		stats := client.Stats()
		if stats.Calls == 0 || stats.FailedCalls != stats.Calls {
			t.Fatalf("HTTP %d: %+v, want every call failed", status, stats)
		}
	}
	if asked := valid.asked(t); asked != 0 {
		t.Fatalf("the valid node was asked for %d batches through the redirects", asked)
	}
}
