// Package testnode starts real snowidd nodes for the client's tests and
// benchmark: each on a free loopback HTTP port (read from its start-up log
// line), gRPC off, in a fresh state directory, ready (GET /readyz = 200)
// when Start returns. Nodes are stopped by pid (SIGKILL), never by name,
// and their state directories removed.
//
// Thread-safety: a Node's methods may be called from several goroutines;
// Kill and Stop are idempotent.
package testnode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Binary returns $SNOWIDD, the snowidd to test against, or an error.
func Binary() (string, error) {
	path := os.Getenv("SNOWIDD")
	if path == "" {
		return "", fmt.Errorf("SNOWIDD is not set: point it at a snowidd binary")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("SNOWIDD: %v", err)
	}
	return path, nil
}

// Node is one running snowidd.
type Node struct {
	URL        string // http://127.0.0.1:PORT
	Datacenter int64
	Worker     int64

	cmd      *exec.Cmd
	stateDir string
	mu       sync.Mutex
	log      bytes.Buffer // its stdout and stderr
	exited   chan struct{}
	stopOnce sync.Once
}

var boundHTTP = regexp.MustCompile(`\bhttp (127\.0\.0\.1:[0-9]+)`)

// Start runs `binary` as datacenter `datacenter`, worker `worker`, with
// `extra` flags after the common ones, and waits until it is ready.
func Start(binary string, datacenter, worker int64, extra ...string) (*Node, error) {
	dir, err := os.MkdirTemp("", "snowid-go-node-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--http", "127.0.0.1:0", "--grpc", "off", "--state-dir", dir,
		"--worker-id", fmt.Sprint(worker), "--datacenter-id", fmt.Sprint(datacenter)}, extra...)
	n := &Node{Datacenter: datacenter, Worker: worker, stateDir: dir, exited: make(chan struct{})}
	n.cmd = exec.Command(binary, args...)
	// Killed with the test process should it die first.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n.cmd.Stderr = n.cmd.Stdout
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	address := make(chan string, 1)
	go n.readLog(out, address)
	if err := n.awaitReady(address); err != nil {
		n.Stop()
		return nil, fmt.Errorf("snowidd %v: %v; its log:\n%s", args, err, n.Log())
	}
	return n, nil
}

// readLog keeps the node's output and sends the bound HTTP address once.
func (n *Node) readLog(out io.Reader, address chan<- string) {
	defer close(n.exited)
	scanner := bufio.NewScanner(out)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	sent := false
	for scanner.Scan() {
		line := scanner.Text()
		n.mu.Lock()
		n.log.WriteString(line + "\n")
		n.mu.Unlock()
		if m := boundHTTP.FindStringSubmatch(line); m != nil && !sent {
			address <- m[1]
			sent = true
		}
	}
	n.cmd.Wait()
}

func (n *Node) awaitReady(address <-chan string) error {
	deadline := time.After(20 * time.Second)
	select {
	case a := <-address:
		n.URL = "http://" + a
	case <-n.exited:
		return fmt.Errorf("exited before logging its HTTP address")
	case <-deadline:
		return fmt.Errorf("logged no HTTP address within 20 s")
	}
	client := http.Client{Timeout: time.Second}
	for {
		response, err := client.Get(n.URL + "/readyz")
		if err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-n.exited:
			return fmt.Errorf("exited before /readyz answered 200")
		case <-deadline:
			return fmt.Errorf("/readyz did not answer 200 within 20 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to the node's pid and waits until it has exited.
func (n *Node) Kill() {
	n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

// Stop kills the node and removes its state directory.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		n.Kill()
		os.RemoveAll(n.stateDir)
	})
}

// Log returns what the node printed so far.
func (n *Node) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}
