import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dockerCli, REQUIRE_DOCKER } from "./docker.ts";
import { pickFreePort } from "./ports.ts";
import { type Launched, launchProgram } from "./process.ts";

/**
 * A real image registry for the image tests: Debian's `docker-registry` (the
 * CNCF distribution registry) with its own config file and data directory, a self-signed
 * TLS certificate (openssl) and, when asked, htpasswd auth (bcrypt, `htpasswd -B` from
 * apache2-utils). The engine trusts the certificate through
 * /etc/docker/certs.d/<address>:<port>/ca.crt, read per pull (no dockerd restart). Pushes go
 * through the docker CLI with a temporary DOCKER_CONFIG, so the host's login state is never
 * read or changed. Disposing stops the registry and removes its files, the trust entry and
 * every local image tagged under its address (all made by this fixture or pulled from it).
 *
 * It listens on 127.0.0.1 unless `onHostAddress`: then on TEST_REGISTRY_ADDRESS, a TEST-NET-1
 * address this fixture adds to the loopback interface (and removes). The engine treats every
 * 127.0.0.0/8 registry as insecure and, after a refusal, retries over plain HTTP and reports
 * that attempt; a registry elsewhere is spoken to over TLS only, as a real remote one is, so
 * its own refusal (401 "no basic auth credentials") reaches the backend. Traffic stays on
 * this host.
 */

export interface RegistryAuth {
  username: string;
  password: string;
}

export interface TestRegistry extends AsyncDisposable {
  /** `<address>:<port>`: the registry part of image references. */
  readonly host: string;
  readonly auth: RegistryAuth | undefined;
  /**
   * Builds a fresh image FROM `base` (a local image) whose config differs by `variant` (a
   * label), so every call yields a new digest, tags it `<host>/<repo>` and pushes it.
   * Returns the pushed repo digest `<host>/<repo-name>@sha256:…`.
   */
  push(base: string, repo: string, variant?: string): Promise<string>;
  /** The registry's output so far (for the tests that grep every output for a secret). */
  output(): string;
}

const REGISTRY_BIN = "/usr/bin/docker-registry";
const CERTS_D = "/etc/docker/certs.d";

/**
 * `skip` verdict for a suite that needs the registry tools besides the engine: false when
 * docker-registry and htpasswd are installed; with REQUIRE_DOCKER=1 (CI) their absence
 * throws instead, so the run fails rather than skipping.
 */
export function registrySkip(): false | string {
  const missing = [REGISTRY_BIN, "/usr/bin/htpasswd"].filter((bin) => !existsSync(bin));
  if (missing.length === 0) return false;
  const why = `${missing.join(" and ")} missing: apt-get install docker-registry apache2-utils (or run .ci/docker-setup.sh)`;
  if (REQUIRE_DOCKER) throw new Error(why);
  return why;
}

function run(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(" ")}: ${stderr || err.message}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function mustDocker(args: string[], timeoutMs = 120_000): Promise<string> {
  const r = await dockerCli(args, timeoutMs);
  if (r.code !== 0) throw new Error(`docker ${args.join(" ")} failed: ${r.out}`);
  return r.out;
}

/** The address a registry started `onHostAddress` listens on (TEST-NET-1, RFC 5737). */
export const TEST_REGISTRY_ADDRESS = "192.0.2.10";

/**
 * Adds TEST_REGISTRY_ADDRESS to the loopback interface (kernels without the dummy link
 * type have it too); returns how to remove it (a no-op when it was already there).
 */
async function addHostAddress(): Promise<() => Promise<void>> {
  const present = await run("ip", ["-o", "addr", "show", "to", `${TEST_REGISTRY_ADDRESS}/32`]);
  if (present.trim() !== "") return async () => {};
  await run("ip", ["addr", "add", `${TEST_REGISTRY_ADDRESS}/32`, "dev", "lo"]);
  return async () => {
    await run("ip", ["addr", "del", `${TEST_REGISTRY_ADDRESS}/32`, "dev", "lo"]).catch(() => "");
  };
}

export async function startRegistry(
  opts: { auth?: RegistryAuth; onHostAddress?: boolean } = {},
): Promise<TestRegistry> {
  const dir = mkdtempSync(join(tmpdir(), "fred-registry-"));
  const port = await pickFreePort();
  const address = opts.onHostAddress ? TEST_REGISTRY_ADDRESS : "127.0.0.1";
  const host = `${address}:${port}`;
  const certDir = join(CERTS_D, host);
  const dockerConfig = join(dir, "docker-config");
  mkdirSync(join(dir, "data"));
  mkdirSync(dockerConfig);
  let proc: Launched<true> | undefined;
  let removeAddress = async () => {};
  const cleanup = async () => {
    await proc?.stop(5_000);
    await removeAddress();
    rmSync(certDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
    const refs = await dockerCli(["images", "--format", "{{.Repository}}:{{.Tag}}", `${host}/*`]);
    const tagged = refs.out.split("\n").filter((r) => r.startsWith(`${host}/`) && !r.endsWith(":<none>"));
    const digests = await dockerCli([
      "images",
      "--digests",
      "--format",
      "{{.Repository}}@{{.Digest}}",
      `${host}/*`,
    ]);
    const pinned = digests.out.split("\n").filter((r) => r.startsWith(`${host}/`) && !r.endsWith("@<none>"));
    const all = [...new Set([...tagged, ...pinned])];
    if (all.length > 0) await dockerCli(["rmi", "--force", ...all]);
  };
  try {
    if (opts.onHostAddress) removeAddress = await addHostAddress();
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${address}`,
      "-addext",
      `subjectAltName=IP:${address}`,
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ]);
    mkdirSync(certDir, { recursive: true });
    writeFileSync(join(certDir, "ca.crt"), await run("cat", [join(dir, "cert.pem")]));
    const authBlock: string[] = [];
    if (opts.auth) {
      const line = await run("htpasswd", ["-Bbn", opts.auth.username, opts.auth.password]);
      writeFileSync(join(dir, "htpasswd"), line.trim() + "\n", { mode: 0o600 });
      authBlock.push("auth:", "  htpasswd:", "    realm: fred-test", `    path: ${join(dir, "htpasswd")}`);
    }
    writeFileSync(
      join(dir, "config.yml"),
      [
        "version: 0.1",
        "log:",
        "  level: info",
        "  formatter: text",
        "storage:",
        "  filesystem:",
        `    rootdirectory: ${join(dir, "data")}`,
        "  delete:",
        "    enabled: true",
        "http:",
        `  addr: ${host}`,
        `  secret: ${randomUUID()}`,
        "  tls:",
        `    certificate: ${join(dir, "cert.pem")}`,
        `    key: ${join(dir, "key.pem")}`,
        ...authBlock,
        "",
      ].join("\n"),
    );
    proc = await launchProgram<true>(REGISTRY_BIN, ["serve", join(dir, "config.yml")], {
      label: `docker-registry ${host}`,
      ready: (line) => (line.includes("listening on") ? true : undefined),
      readyTimeoutMs: 30_000,
    });
    if (opts.auth) {
      await run(
        "docker",
        ["--config", dockerConfig, "login", host, "--username", opts.auth.username, "--password-stdin"],
        opts.auth.password,
      );
    }
  } catch (err) {
    await cleanup().catch(() => {});
    throw err;
  }
  const registry: TestRegistry = {
    host,
    auth: opts.auth,
    async push(base, repo, variant = randomUUID()) {
      const ref = `${host}/${repo}`;
      await run(
        "docker",
        ["build", "--quiet", "--label", `fred.test.variant=${variant}`, "--tag", ref, "-"],
        `FROM ${base}\n`,
      );
      const out = await mustDocker(["--config", dockerConfig, "push", ref]);
      const digest = /digest: (sha256:[0-9a-f]{64})/.exec(out)?.[1];
      if (!digest) throw new Error(`docker push ${ref} printed no digest: ${out}`);
      return `${ref.replace(/:[^:/]+$/, "")}@${digest}`;
    },
    output: () => `${proc?.stdout() ?? ""}${proc?.stderr() ?? ""}`,
    [Symbol.asyncDispose]: cleanup,
  };
  return registry;
}
