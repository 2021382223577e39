// Installed as Go installs: the module, written at its version as a module
// proxy tree by internal/modproxy, is required by a fresh program in a
// temporary directory outside the source tree (go get snowid.io/snowid@vX
// with GOPROXY=file://…, a module cache of its own, nothing downloaded
// from the network), which builds and draws IDs from a live snowidd.
package snowid_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"snowid.io/snowid"
)

// The program a user would write: IDs, one as JSON through snowid.ID, and
// the stats.
const installedProgram = `package main

import (
	"encoding/json"
	"fmt"
	"os"

	"snowid.io/snowid"
)

func main() {
	options := snowid.DefaultOptions()
	options.Endpoints = os.Args[1:]
	client, err := snowid.Open(options)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ids := make([]int64, 5000)
	if err := client.NextN(ids); err != nil {
		panic(err)
	}
	text, _ := json.Marshal(struct {
		First snowid.ID ` + "`json:\"first\"`" + `
		Count int       ` + "`json:\"count\"`" + `
		Stats snowid.Stats
	}{snowid.ID(ids[0]), len(ids), client.Stats()})
	fmt.Println(string(text))
}
`

func TestTheModuleInstallsAtItsVersionFromAProxyTree(t *testing.T) {
	t.Parallel() // mostly the compiler's time: beside the tests that wait on nodes
	node := startNode(t, 0, 12)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	work := t.TempDir()
	proxy, app := filepath.Join(work, "proxy"), filepath.Join(work, "app")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	version := "v" + snowid.Version
	run(".", nil, goTool, "run", "./internal/modproxy", "-out", proxy)
	for _, file := range []string{"list", version + ".info", version + ".mod", version + ".zip"} {
		if _, err := os.Stat(filepath.Join(proxy, "snowid.io", "snowid", "@v", file)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(filepath.Join(app, "main.go"), []byte(installedProgram), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// A module cache of its own (GOPATH), writable so that it can be removed.
	env := []string{"GOPROXY=file://" + filepath.ToSlash(proxy), "GONOSUMDB=snowid.io/snowid",
		"GOFLAGS=-mod=mod -modcacherw", "GOPATH=" + filepath.Join(work, "gopath"),
		"GO111MODULE=on"}
	run(app, env, goTool, "mod", "init", "example.com/app")
	run(app, env, goTool, "get", "snowid.io/snowid@"+version)
	goMod, _ := os.ReadFile(filepath.Join(app, "go.mod"))
	goSum, _ := os.ReadFile(filepath.Join(app, "go.sum"))
	if !strings.Contains(string(goMod), "require snowid.io/snowid "+version) ||
		!strings.Contains(string(goSum), "snowid.io/snowid "+version+" h1:") {
		t.Fatalf("go.mod:\n%s\ngo.sum:\n%s", goMod, goSum)
	}
	run(app, env, goTool, "build", "-o", "app", ".")
	out := run(app, nil, filepath.Join(app, "app"), node.URL)
	var got struct {
		First string
		Count int
		Stats snowid.Stats
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("the program printed %q: %v", out, err)
	}
	first, err := snowid.ParseID(got.First)
	if err != nil || first < 1<<22 || got.Count != 5000 || got.Stats.IDsServed != 5000 ||
		got.Stats.FailedCalls != 0 {
		t.Fatalf("the installed program printed %s", out)
	}

	// The same tree from a static web server (as snowid.io's go-import
	// "mod" tag points the go command at one): the same module, the same sum.
	server := httptest.NewServer(http.FileServer(http.Dir(proxy)))
	defer server.Close()
	env = []string{"GOPROXY=" + server.URL, "GONOSUMDB=snowid.io/snowid",
		"GOFLAGS=-mod=mod -modcacherw", "GOPATH=" + filepath.Join(work, "gopath-http")}
	var downloaded struct{ Version, Sum string }
	text := run(app, env, goTool, "mod", "download", "-json", "snowid.io/snowid@"+version)
	if err := json.Unmarshal([]byte(text), &downloaded); err != nil ||
		downloaded.Version != version ||
		!strings.Contains(string(goSum), "snowid.io/snowid "+version+" "+downloaded.Sum+"\n") {
		t.Fatalf("over HTTP: %s (%v); go.sum:\n%s", text, err, goSum)
	}
}
