// Checks a Kubernetes manifest of snowid (deploy/kubernetes/snowid.yaml):
//
// 1. Every document parses as YAML and validates against the Kubernetes API
//    schema of its apiVersion and kind (kubernetes-models: types, required
//    fields, enums and formats of the OpenAPI schemas; it does not reject
//    unknown field names).
// 2. What the schemas cannot see: the StatefulSet's serviceName is a headless
//    Service, every selector (Services, PodDisruptionBudget, StatefulSet)
//    matches the pod labels, every named port and volume exists, every
//    ConfigMap and Secret referred to is in the manifest (or optional), the
//    state directory is a volumeClaimTemplate (no emptyDir), the token file
//    lies in a Secret volume, the startup probe outlasts claim_timeout_ms,
//    resources and a restrictive securityContext are set.
//
// Writes the ConfigMap's snowid.toml to CONFIG_OUT for `snowidd --check-config`.
//   node validate.mjs MANIFEST CONFIG_OUT
import { readFileSync, writeFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const [manifestPath, configOut] = process.argv.slice(2);
if (!manifestPath || !configOut) {
  console.error("usage: node validate.mjs MANIFEST CONFIG_OUT");
  process.exit(2);
}

const problems = [];
const check = (condition, message) => {
  if (!condition) problems.push(message);
};

const documents = [];
for (const document of parseAllDocuments(readFileSync(manifestPath, "utf8"))) {
  for (const error of [...document.errors, ...document.warnings]) {
    problems.push(`YAML: ${error.message}`);
  }
  const object = document.toJS();
  if (object !== null) documents.push(object);
}

// 1. The schemas.
for (const object of documents) {
  const name = `${object.kind}/${object.metadata?.name}`;
  check(object.apiVersion && object.kind && object.metadata?.name, `${name}: no apiVersion, kind or name`);
  let model;
  try {
    model = await import(`kubernetes-models/${object.apiVersion}/${object.kind}`);
  } catch {
    problems.push(`${name}: no schema for ${object.apiVersion} ${object.kind}`);
    continue;
  }
  try {
    new model[object.kind](object).validate();
  } catch (error) {
    problems.push(`${name}: ${error.message}`);
  }
}

// 2. The cross-references.
const all = (kind) => documents.filter((o) => o.kind === kind);
const byName = (kind, name) => all(kind).find((o) => o.metadata.name === name);
const matches = (selector, labels) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels?.[key] === value);

const statefulSets = all("StatefulSet");
check(statefulSets.length === 1, `want one StatefulSet, found ${statefulSets.length}`);
const set = statefulSets[0];
if (set) {
  const pod = set.spec.template;
  const labels = pod.metadata?.labels;
  const podSpec = pod.spec;
  check(matches(set.spec.selector?.matchLabels, labels), "StatefulSet selector does not match its pod labels");

  const governing = byName("Service", set.spec.serviceName);
  check(governing, `serviceName ${set.spec.serviceName}: no such Service`);
  check(governing?.spec.clusterIP === "None", `serviceName ${set.spec.serviceName}: not headless (clusterIP: None)`);
  for (const service of all("Service")) {
    check(matches(service.spec.selector, labels), `Service ${service.metadata.name}: selector matches no pod`);
  }
  const budgets = all("PodDisruptionBudget");
  check(budgets.length > 0, "no PodDisruptionBudget");
  for (const budget of budgets) {
    check(matches(budget.spec.selector?.matchLabels, labels), `PodDisruptionBudget ${budget.metadata.name}: selector matches no pod`);
  }

  // Pod security: the pod's settings, or each container's own.
  const podSecurity = podSpec.securityContext ?? {};
  check(podSpec.automountServiceAccountToken === false, "the pod mounts a service account token it does not need");
  const secretRefs = [];
  const configMapRefs = [];
  const claims = new Set((set.spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name));
  const volumes = new Map((podSpec.volumes ?? []).map((v) => [v.name, v]));
  for (const volume of volumes.values()) {
    if (volume.secret) secretRefs.push({ name: volume.secret.secretName, optional: volume.secret.optional });
    if (volume.configMap) configMapRefs.push({ name: volume.configMap.name, optional: volume.configMap.optional });
    check(!claims.has(volume.name), `volume ${volume.name} shadows a volumeClaimTemplate`);
  }

  const container = podSpec.containers.find((c) => c.name === "snowidd");
  check(container, "no container snowidd");
  const mounts = new Map();
  for (const c of podSpec.containers) {
    const security = c.securityContext ?? {};
    const runAsNonRoot = security.runAsNonRoot ?? podSecurity.runAsNonRoot;
    check(runAsNonRoot === true, `${c.name}: runAsNonRoot is not true`);
    check(security.readOnlyRootFilesystem === true, `${c.name}: readOnlyRootFilesystem is not true`);
    check(security.allowPrivilegeEscalation === false, `${c.name}: allowPrivilegeEscalation is not false`);
    check(security.privileged !== true, `${c.name}: privileged`);
    check(security.capabilities?.drop?.includes("ALL"), `${c.name}: capabilities do not drop ALL`);
    check(security.capabilities?.add === undefined, `${c.name}: adds capabilities`);
    const seccomp = security.seccompProfile ?? podSecurity.seccompProfile;
    check(seccomp?.type === "RuntimeDefault", `${c.name}: seccomp profile is not RuntimeDefault`);
    for (const kind of ["requests", "limits"]) {
      check(c.resources?.[kind]?.cpu && c.resources?.[kind]?.memory, `${c.name}: no cpu and memory ${kind}`);
    }
    const ports = new Set((c.ports ?? []).map((p) => p.name));
    for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
      const port = c[probe]?.httpGet?.port;
      check(c[probe], `${c.name}: no ${probe}`);
      if (typeof port === "string") check(ports.has(port), `${c.name}: ${probe} port ${port} is no container port`);
    }
    for (const service of all("Service")) {
      for (const port of service.spec.ports) {
        if (typeof port.targetPort === "string") {
          check(ports.has(port.targetPort), `Service ${service.metadata.name}: targetPort ${port.targetPort} is no container port`);
        }
      }
    }
    for (const mount of c.volumeMounts ?? []) {
      check(volumes.has(mount.name) || claims.has(mount.name), `${c.name}: volume ${mount.name} does not exist`);
      mounts.set(mount.mountPath, mount.name);
    }
    for (const variable of c.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref) secretRefs.push({ name: ref.name, optional: ref.optional });
    }
  }
  for (const ref of secretRefs) {
    check(ref.optional || byName("Secret", ref.name), `Secret ${ref.name} is used but not defined`);
  }
  for (const ref of configMapRefs) {
    check(ref.optional || byName("ConfigMap", ref.name), `ConfigMap ${ref.name} is used but not defined`);
  }

  // The configuration snowidd reads: the ConfigMap mounted where --config points.
  const configArgument = container?.command?.indexOf("--config") ?? -1;
  const configPath = configArgument >= 0 ? container.command[configArgument + 1] : undefined;
  check(configPath, "snowidd is given no --config");
  const configDirectory = configPath?.replace(/\/[^/]*$/, "");
  const configVolume = volumes.get(mounts.get(configDirectory));
  const configMap = configVolume?.configMap && byName("ConfigMap", configVolume.configMap.name);
  const configFile = configPath?.replace(/^.*\//, "");
  const toml = configMap?.data?.[configFile];
  check(toml, `--config ${configPath}: no ConfigMap key ${configFile} mounted there`);
  if (toml) {
    writeFileSync(configOut, toml);
    // The top-level `name = value` lines (the file has no tables).
    const option = (name) => {
      const line = toml.split("\n").find((l) => l.trimStart().startsWith(`${name} =`));
      return line?.replace(/^[^=]*=\s*/, "").replace(/^"(.*)"$/, "$1");
    };
    const stateDir = option("state_dir");
    check(stateDir, "snowid.toml sets no state_dir");
    check(claims.has(mounts.get(stateDir)), `state_dir ${stateDir} is not on a volumeClaimTemplate`);
    const tokenFile = option("token_file");
    const tokenVolume = volumes.get(mounts.get(tokenFile?.replace(/\/[^/]*$/, "")));
    check(tokenVolume?.secret, `token_file ${tokenFile} is not in a Secret volume`);
    const claimTimeoutMs = Number(option("claim_timeout_ms") ?? 30000);
    const startup = container?.startupProbe;
    const startupMs =
      1000 * ((startup?.initialDelaySeconds ?? 0) + (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3));
    check(startupMs > claimTimeoutMs, `the startupProbe allows ${startupMs} ms, claim_timeout_ms is ${claimTimeoutMs}`);
  }
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`FAIL: ${problem}`);
  process.exit(1);
}
console.log(`${manifestPath}: ${documents.length} documents valid: ${documents.map((o) => o.kind).join(", ")}`);
