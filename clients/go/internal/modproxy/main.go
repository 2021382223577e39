// Command modproxy writes this module, at its version, as a Go module proxy
// tree (the GOPROXY protocol, https://go.dev/ref/mod#goproxy-protocol):
//
//	OUT/snowid.io/snowid/@v/list          the versions, one a line
//	OUT/snowid.io/snowid/@v/v0.2.0.info   {"Version":"v0.2.0","Time":"…"}
//	OUT/snowid.io/snowid/@v/v0.2.0.mod    the module's go.mod
//	OUT/snowid.io/snowid/@v/v0.2.0.zip    the module's files under
//	                                      snowid.io/snowid@v0.2.0/
//
// Offline, a program requires the module from that tree with
//
//	GOPROXY=file:///OUT GONOSUMDB=snowid.io/snowid go get snowid.io/snowid@v0.2.0
//
// and the same tree on a static web server is what `go get` reads over
// HTTPS (clients/go/README.md, "Install"). Run from clients/go:
//
//	go run ./internal/modproxy -out DIR [-version v0.2.0]
//
// The zip holds every regular file of the module's directory, leaving out
// directories named vendor or starting with "." and nested modules, as the
// go command's own zips do; a symbolic link is refused, and so is a module
// above 500 MB. The version defaults to snowid.Version; a tree already in
// OUT keeps its other versions.
package main

import (
	"archive/zip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"snowid.io/snowid"
)

const modulePath = "snowid.io/snowid"

func main() {
	out := flag.String("out", "", "the proxy tree's root directory (made if missing)")
	version := flag.String("version", "v"+snowid.Version, "the module version to write")
	source := flag.String("source", ".", "the module's directory (clients/go)")
	flag.Parse()
	if *out == "" || !strings.HasPrefix(*version, "v") {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-version vX.Y.Z] [-source clients/go]")
		os.Exit(2)
	}
	if err := write(*out, *version, *source); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func write(out, version, source string) error {
	goMod, err := os.ReadFile(filepath.Join(source, "go.mod"))
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(goMod), "module "+modulePath+"\n") {
		return fmt.Errorf("%s/go.mod is not module %s", source, modulePath)
	}
	dir := filepath.Join(out, filepath.FromSlash(modulePath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeZip(filepath.Join(dir, version+".zip"), version, source); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), goMod, 0o644); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{version,
		time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)})
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return err
	}
	return writeList(filepath.Join(dir, "list"), version)
}

// writeZip: every regular file under source, as the go command lays out a
// module zip: "snowid.io/snowid@VERSION/" + its slash-separated path.
func writeZip(name, version, source string) error {
	file, err := os.Create(name)
	if err != nil {
		return err
	}
	defer file.Close()
	archive := zip.NewWriter(file)
	var total int64
	err = filepath.WalkDir(source, func(p string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(source, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if entry.IsDir() {
			if rel != "." && (entry.Name() == "vendor" || strings.HasPrefix(entry.Name(), ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); rel != "." && err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !entry.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (a module zip holds none)", p)
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > 500<<20 {
			return fmt.Errorf("the module passes 500 MB, the go command's limit")
		}
		writer, err := archive.Create(path.Join(modulePath+"@"+version, rel))
		if err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(writer, in)
		return err
	})
	if err != nil {
		return err
	}
	if err := archive.Close(); err != nil {
		return err
	}
	return file.Close()
}

// writeList: the versions in the list already there, and this one, sorted.
func writeList(name, version string) error {
	versions := map[string]bool{version: true}
	if old, err := os.ReadFile(name); err == nil {
		for _, v := range strings.Fields(string(old)) {
			versions[v] = true
		}
	}
	var list []string
	for v := range versions {
		list = append(list, v)
	}
	sort.Strings(list) // the go command orders them itself; this is for people
	return os.WriteFile(name, []byte(strings.Join(list, "\n")+"\n"), 0o644)
}
