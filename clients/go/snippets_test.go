// Every `go` block of this client's README and of docs/clients.md is
// compiled and run against two live nodes: a block that is a whole program
// as it stands, a fragment inside a main function (with the imports its
// names need and a `token` variable); the documented endpoints are
// replaced by the live nodes' (segment tags auto-created, for NextTag).
// A block that uses database/sql (the framework example) gets Debian's
// github.com/lib/pq and runs against the PostgreSQL of $POSTGRES_URL, which
// test.sh starts (clients/testing/postgres.sh), as $DATABASE_URL.
package snowid_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// The endpoints the documents show; each becomes a live node's.
var documentedEndpoints = [][2]string{
	{"http://10.0.0.1:8080", "http://10.0.0.2:8080"},
	{"http://127.0.0.1:8080", "http://127.0.0.1:8081"},
}

// Debian's lib/pq (golang-github-lib-pq-dev), for the database/sql example.
const libPQ = "/usr/share/gocode/src/github.com/lib/pq"

// The packages a fragment's names may need, by the prefix that uses them.
var fragmentImports = map[string]string{"snowid.": "snowid.io/snowid", "log.": "log",
	"fmt.": "fmt", "json.": "encoding/json", "errors.": "errors", "time.": "time", "os.": "os"}

// program: a block as a whole program.
func program(block string) string {
	if strings.HasPrefix(block, "package ") {
		return block
	}
	var imports, body []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "import ") {
			continue // added below from the names used
		}
		body = append(body, line)
	}
	code := strings.Join(body, "\n")
	for prefix, path := range fragmentImports {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(prefix)).MatchString(code) {
			imports = append(imports, fmt.Sprintf("%q", path))
		}
	}
	return "package main\n\nimport (\n" + strings.Join(imports, "\n") +
		")\n\nvar token = \"\" // the nodes of the test take none\n\nfunc main() {\n" + code + "}\n"
}

func TestEveryGoBlockOfTheDocsCompilesAndRuns(t *testing.T) {
	t.Parallel() // mostly the compiler's time: beside the tests that wait on nodes
	a := startNode(t, 1, 30, "--segment-auto-create", "true")
	b := startNode(t, 1, 31, "--segment-auto-create", "true")
	work := t.TempDir()
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	usesSQL := map[string]bool{}
	for _, document := range []string{"README.md", "../../docs/clients.md"} {
		text, err := os.ReadFile(document)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlock.FindAllStringSubmatch(string(text), -1)
		if len(blocks) == 0 {
			t.Fatalf("%s: no go block", document)
		}
		for i, block := range blocks {
			source := program(block[1])
			for _, pair := range documentedEndpoints {
				source = strings.ReplaceAll(source, pair[0], a.URL)
				source = strings.ReplaceAll(source, pair[1], b.URL)
			}
			name := fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(document), ".md"), i+1)
			dir := filepath.Join(work, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(source), 0o644); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			usesSQL[name] = strings.Contains(source, `"database/sql"`)
		}
	}
	goMod := "module example.com/snippets\n\ngo 1.19\n\nrequire snowid.io/snowid v0.0.0\n\n" +
		"replace snowid.io/snowid => " + here + "\n"
	databaseURL := os.Getenv("POSTGRES_URL")
	for _, name := range names {
		if !usesSQL[name] {
			continue
		}
		if _, err := os.Stat(filepath.Join(libPQ, "go.mod")); err != nil {
			t.Fatalf("block %s needs github.com/lib/pq: apt-get install "+
				"golang-github-lib-pq-dev (%v)", name, err)
		}
		if databaseURL == "" {
			t.Fatalf("block %s needs a PostgreSQL: run clients/go/test.sh, which starts one, "+
				"or set POSTGRES_URL", name)
		}
		goMod += "\nrequire github.com/lib/pq v1.10.7\n\nreplace github.com/lib/pq => " + libPQ + "\n"
		break
	}
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(goTool, "build", "-o", filepath.Join(work, "bin")+"/", "./...")
	build.Dir = work
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the blocks do not compile: %v\n%s", err, out)
	}
	for _, name := range names {
		run := exec.Command(filepath.Join(work, "bin", name))
		if usesSQL[name] {
			// A throwaway server without TLS, which lib/pq asks for by default.
			run.Env = append(os.Environ(), "DATABASE_URL="+databaseURL+"?sslmode=disable")
		}
		timer := time.AfterFunc(30*time.Second, func() { run.Process.Kill() })
		out, err := run.CombinedOutput()
		timer.Stop()
		if err != nil {
			t.Errorf("block %s failed: %v\n%s", name, err, out)
		}
	}
}
