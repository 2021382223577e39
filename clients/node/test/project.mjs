// Test support: the client as a user gets it. `npm pack` of clients/node,
// installed with `npm install ./snowid-client-X.tgz` (offline: the client
// has no dependencies) into a fresh project in a temporary directory
// outside the tree.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const CLIENT_DIR = fileURLToPath(new URL("..", import.meta.url));
const NPM_QUIET = ["--no-audit", "--no-fund", "--loglevel=error"];

// { dir, tarball, files (the paths packed) }; remove(dir) when done.
export function freshProject() {
  const dir = mkdtempSync(path.join(tmpdir(), "snowid-node-project-"));
  const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", dir, ...NPM_QUIET], {
    cwd: CLIENT_DIR,
    encoding: "utf8",
  });
  const [{ filename, files }] = JSON.parse(packed);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "fresh-app", version: "1.0.0", private: true }));
  execFileSync("npm", ["install", "--offline", ...NPM_QUIET, `./${filename}`], { cwd: dir, stdio: "pipe" });
  return { dir, tarball: path.join(dir, filename), files: files.map((file) => file.path).sort() };
}

export function remove(dir) {
  rmSync(dir, { recursive: true, force: true });
}
