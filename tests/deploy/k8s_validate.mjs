// Checks Kubernetes objects against the API schema of their kind; used by
// tests/deploy/kubernetes_test.py.
//
//   node k8s_validate.mjs NODE_MODULES OBJECTS.json KSERVE_SCHEMA.json
//
// OBJECTS.json is a list of {source, object}. Built-in kinds and
// ServiceMonitor are checked twice against kubernetes-models (generated from
// Kubernetes' and Prometheus Operator's OpenAPI documents): at run time by
// its ajv validators (types, required fields, enums, formats), and by tsc
// against its TypeScript types, which refuses fields the API does not have
// (a misspelt `readinessProbe` is otherwise silently dropped by the API
// server). KServe kinds are checked against KSERVE_SCHEMA.json, their
// containers as core/v1 Containers. Prints one line per problem; exit 1 when
// there is one, 0 when every object is valid.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, objectsFile, kserveFile] = process.argv.slice(2);
const objects = JSON.parse(fs.readFileSync(objectsFile, "utf8"));
const models = path.join(modules, "kubernetes-models");

// apiVersion/kind -> the kubernetes-models file that defines it.
function modelFile(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return path.join(modules, "@kubernetes-models/prometheus-operator", apiVersion, `${kind}.js`);
  }
  return path.join(models, apiVersion, `${kind}.js`);  // core "v1" -> v1/, "apps/v1" -> apps/v1/
}

const problems = [];
const typed = [];  // [name, interface, file, object] for tsc

async function runtimeCheck(label, file, className, value) {
  if (!fs.existsSync(file)) {
    problems.push(`${label}: no schema for ${className} (${path.relative(modules, file)} missing)`);
    return;
  }
  const mod = await import(pathToFileURL(file));
  try {
    new mod[className](value).validate();
  } catch (e) {
    problems.push(`${label}: ${e.message}`);
  }
  typed.push([label, `I${className}`, file, value]);
}

const Ajv = (await import(pathToFileURL(path.join(modules, "ajv/dist/ajv.js")))).default;
const ajv = new Ajv({ allErrors: true, strict: false });
const kserve = JSON.parse(fs.readFileSync(kserveFile, "utf8"));
ajv.addSchema(kserve, "kserve");

for (const { source, object } of objects) {
  const label = `${source}: ${object.kind}/${object.metadata?.name}`;
  if (object.apiVersion?.startsWith("serving.kserve.io/")) {
    const validate = ajv.getSchema(`kserve#/$defs/${object.kind}`);
    if (!validate) {
      problems.push(`${label}: no KServe schema for ${object.kind}`);
      continue;
    }
    if (!validate(object)) {
      for (const e of validate.errors) problems.push(`${label}: ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
    }
    const containers = object.kind === "ClusterServingRuntime" ? object.spec?.containers ?? [] : [];
    if (object.kind === "InferenceService" && object.spec?.predictor?.model) {
      // The predictor's model is a Container plus KServe's own fields.
      const { modelFormat, runtime, protocolVersion, storageUri, ...container } = object.spec.predictor.model;
      containers.push({ name: "kserve-container", ...container });
    }
    for (const c of containers) await runtimeCheck(`${label} container ${c.name}`, path.join(models, "v1/Container.js"), "Container", c);
    continue;
  }
  await runtimeCheck(label, modelFile(object.apiVersion, object.kind), object.kind, object);
}

// tsc: each object as a typed literal, so a field the type lacks is an error.
if (typed.length) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ortgpu-k8s-"));
  try {
    const lines = [];
    typed.forEach(([label, iface, file, value], i) => {
      lines.push(`import type { ${iface} as T${i} } from ${JSON.stringify(file)};`);
      lines.push(`// ${label.replace(/\n/g, " ")}`);
      lines.push(`export const o${i}: T${i} = ${JSON.stringify(value, null, 1)};`);
    });
    const ts = path.join(dir, "objects.ts");
    fs.writeFileSync(ts, lines.join("\n") + "\n");
    try {
      execFileSync(process.execPath, [path.join(modules, "typescript/bin/tsc"), "--noEmit", "--strict", "--skipLibCheck",
        "--module", "esnext", "--moduleResolution", "bundler", "--target", "es2022", ts], { encoding: "utf8" });
    } catch (e) {
      // Name the object each error is in: the label comment above its literal.
      const src = fs.readFileSync(ts, "utf8").split("\n");
      for (const line of (e.stdout || e.message).split("\n").filter((l) => l.includes("error TS"))) {
        const m = line.match(/objects\.ts\((\d+),/);
        let where = "";
        if (m) for (let n = Number(m[1]) - 1; n >= 0; n--) if (src[n].startsWith("// ")) { where = src[n].slice(3); break; }
        problems.push(`${where}: ${line.replace(/^.*error /, "")}`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const p of problems) console.log(p);
console.log(`${objects.length} objects, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
