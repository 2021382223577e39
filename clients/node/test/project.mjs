// Test support: the client as a user gets it. `npm pack` of clients/node,
// installed with `npm install ./snowid-client-X.tgz` (offline: the client
// has no dependencies) into a fresh project in a temporary directory
// outside the tree. test.sh makes one for all the tests
// (`node test/project.mjs` prints its directory, given to them as
// CLIENT_PROJECT_DIR: not SNOWID_*, which snowidd reads as options); a
// test run alone makes its own.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const CLIENT_DIR = fileURLToPath(new URL("..", import.meta.url));
const NPM_QUIET = ["--no-audit", "--no-fund", "--loglevel=error"];
const PACKED = "packed.json"; // in the project: what npm pack said

// { dir, tarball, files (the paths packed), shared }; remove() it when done.
export function freshProject() {
  const shared = process.env.CLIENT_PROJECT_DIR;
  if (shared) return { ...JSON.parse(readFileSync(path.join(shared, PACKED), "utf8")), shared: true };
  const dir = mkdtempSync(path.join(tmpdir(), "snowid-node-project-"));
  const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", dir, ...NPM_QUIET], {
    cwd: CLIENT_DIR,
    encoding: "utf8",
  });
  const [{ filename, files }] = JSON.parse(packed);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "fresh-app", version: "1.0.0", private: true }));
  execFileSync("npm", ["install", "--offline", ...NPM_QUIET, `./${filename}`], { cwd: dir, stdio: "pipe" });
  const project = { dir, tarball: path.join(dir, filename), files: files.map((file) => file.path).sort() };
  writeFileSync(path.join(dir, PACKED), JSON.stringify(project));
  return { ...project, shared: false };
}

// Removes a project this process made (test.sh removes the shared one).
export function remove(project) {
  if (!project.shared) rmSync(project.dir, { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(freshProject().dir);
