import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { dockerCli, dockerSkip, REQUIRE_DOCKER, releaseEngineLock } from "../support/docker.ts";
import { type Launched, launchProgram, REPO_ROOT, until } from "../support/index.ts";

/**
 * A release as a provider gets it. `npm run release` runs once (about 2 minutes, the image
 * build included); every check then reads dist/release/: checksums and signature, the SBOM
 * against the lockfile, the tarball's contents, the saved image (loaded, run as a `fred up`
 * trial until its HEALTHCHECK says healthy and a lease is ACTIVE, stopped cleanly; the same
 * trial through deploy/compose.yaml), and the
 * tarball installed globally into a temporary prefix and run on a clean PATH (`fred up` to an
 * ACTIVE lease, `fred lease deploy`). Needs a Docker engine and minisign: skipped without
 * them, a failure with REQUIRE_DOCKER=1 (CI). The Docker test lock is held until the image
 * and compose checks are done.
 */
const OUT = join(REPO_ROOT, "dist", "release");
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const VERSION = pkg.version;
/** What `fred --version` prints from the package: the bundle carries the commit it was packed at. */
function versionLine(): string {
  const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" });
  return head.status === 0 ? `${VERSION} (commit ${head.stdout.trim().slice(0, 12)})` : VERSION;
}
const TGZ = join(OUT, `fred-${VERSION}.tgz`);
const IMAGE = `fred:${VERSION}`;

function hasTool(name: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
}

async function releaseSkip(): Promise<false | string> {
  if (!hasTool("minisign")) {
    if (REQUIRE_DOCKER)
      throw new Error("REQUIRE_DOCKER=1 but minisign is not installed (apt-get install minisign)");
    return "no minisign (apt-get install minisign; REQUIRE_DOCKER=1 makes this a failure)";
  }
  return dockerSkip();
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(
  file: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: opts.cwd ?? REPO_ROOT, env: opts.env, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** The machine's CA trust and the native-module headers, the only settings passed to a clean environment. */
function passThrough(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of ["NODE_EXTRA_CA_CERTS", "npm_config_cafile", "npm_config_nodedir"]) {
    if (process.env[key] !== undefined) env[key] = process.env[key];
  }
  return env;
}

const skip = await releaseSkip();

describe("npm run release", { skip }, () => {
  const scratch = mkdtempSync(join(tmpdir(), "fred-ship-"));
  after(() => rmSync(scratch, { recursive: true, force: true }));

  before(async () => {
    const started = Date.now();
    const r = await run("npm", ["run", "release"], { env: process.env, timeoutMs: 900_000 });
    assert.equal(r.code, 0, `npm run release failed:\n${r.stderr.slice(-4000)}`);
    console.error(`# npm run release took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  it("SHA256SUMS covers the tarball, the image and the SBOM; sha256sum -c passes", async () => {
    const listed = readFileSync(join(OUT, "SHA256SUMS"), "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split(/\s+\*?/)[1]);
    assert.deepEqual(listed.sort(), [`fred-${VERSION}-image.tar`, `fred-${VERSION}.tgz`, "sbom.cdx.json"]);
    const check = await run("sha256sum", ["-c", "SHA256SUMS"], { cwd: OUT });
    assert.equal(check.code, 0, check.stdout + check.stderr);
  });

  it("SHA256SUMS.minisig verifies with the key the release used, and not once SHA256SUMS changes", async () => {
    const pub = join(OUT, "release.pub");
    const ok = await run("minisign", ["-V", "-p", pub, "-m", join(OUT, "SHA256SUMS")]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`fred ${VERSION.replaceAll(".", "\\.")} SHA256SUMS`));

    const tampered = join(scratch, "SHA256SUMS");
    copyFileSync(join(OUT, "SHA256SUMS"), tampered);
    copyFileSync(join(OUT, "SHA256SUMS.minisig"), `${tampered}.minisig`);
    writeFileSync(
      tampered,
      readFileSync(tampered, "utf8").replace(/^[0-9a-f]/, (c) => (c === "0" ? "1" : "0")),
    );
    const bad = await run("minisign", ["-V", "-p", pub, "-m", tampered]);
    assert.notEqual(bad.code, 0, "a changed SHA256SUMS must not verify");

    // Signed with the release key, or marked UNOFFICIAL and not verifiable with it.
    const withRepoKey = await run("minisign", [
      "-V",
      "-p",
      join(REPO_ROOT, "keys", "fred-release.pub"),
      "-m",
      join(OUT, "SHA256SUMS"),
    ]);
    if (process.env.FRED_RELEASE_SECRET_KEY) {
      assert.equal(withRepoKey.code, 0, withRepoKey.stderr);
      assert.equal(existsSync(join(OUT, "UNOFFICIAL")), false);
    } else {
      assert.notEqual(withRepoKey.code, 0, "a throwaway signature must not verify with the release key");
      assert.match(readFileSync(join(OUT, "UNOFFICIAL"), "utf8"), /throwaway key/);
    }
  });

  it("the SBOM (CycloneDX) lists every production dependency at its locked version, and no dev-only one", () => {
    const sbom = JSON.parse(readFileSync(join(OUT, "sbom.cdx.json"), "utf8")) as {
      bomFormat: string;
      metadata: { component: { name: string; version: string } };
      components: { name: string; version: string }[];
    };
    assert.equal(sbom.bomFormat, "CycloneDX");
    assert.deepEqual([sbom.metadata.component.name, sbom.metadata.component.version], ["fred", VERSION]);
    const listed = new Set(sbom.components.map((c) => `${c.name}@${c.version}`));
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; dev?: boolean; optional?: boolean; link?: boolean }>;
    };
    const locked = (name: string) => lock.packages[`node_modules/${name}`]?.version;
    for (const name of Object.keys(pkg.dependencies)) {
      assert.ok(listed.has(`${name}@${locked(name)}`), `${name}@${locked(name)} is not in the SBOM`);
    }
    // Every package of the production tree, transitive ones included (optional ones are
    // platform-specific and may be absent here).
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === "" || entry.dev || entry.optional || entry.link) continue;
      const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
      assert.ok(
        listed.has(`${name}@${entry.version}`),
        `${name}@${entry.version} (${path}) is not in the SBOM`,
      );
    }
    for (const name of ["esbuild", "tsx", "typescript", "@biomejs/biome"]) {
      assert.ok(!sbom.components.some((c) => c.name === name), `dev-only ${name} is in the SBOM`);
    }
  });

  it("the tarball holds the built bundle, bin/fred.js, docs, examples, deploy/, schemas and the key; no sources", async () => {
    const list = await run("tar", ["-tzf", TGZ]);
    assert.equal(list.code, 0, list.stderr);
    const files = new Set(list.stdout.trim().split("\n"));
    for (const f of [
      "bin/fred.js",
      "lib/fred.mjs",
      "lib/dashboard/index.html",
      "lib/dashboard/app.js",
      "lib/dashboard/styles.css",
      "lib/dashboard/favicon.svg",
      "npm-shrinkwrap.json",
      "package.json",
      "README.md",
      "LICENSE",
      "CHANGELOG.md",
      "docs/operator-guide.md",
      "docs/releasing.md",
      "examples/providerd.yaml",
      "examples/docker-backend.yaml",
      "deploy/compose.yaml",
      "deploy/container/healthcheck.mjs",
      "deploy/systemd/fred-providerd.service",
      "schemas/manifest.schema.json",
      "keys/fred-release.pub",
    ]) {
      assert.ok(files.has(`package/${f}`), `package/${f} is missing`);
    }
    const unwanted = [...files].filter((f) => /^package\/(src|test|scripts|bench|dist)\/|\.ts$/.test(f));
    assert.deepEqual(unwanted, [], "sources, tests or build scripts were packed");
    const manifest = JSON.parse((await run("tar", ["-xzOf", TGZ, "package/package.json"])).stdout) as Record<
      string,
      unknown
    > & { dependencies: Record<string, string> };
    assert.equal(manifest.private, undefined);
    assert.equal(manifest.license, "Apache-2.0");
    assert.ok(
      manifest.repository && manifest.engines && manifest.files,
      "repository, engines and files are set",
    );
    for (const buildOnly of ["esbuild", "tsx"]) assert.equal(manifest.dependencies[buildOnly], undefined);
  });

  describe("the image", () => {
    const name = `fred-ship-trial-${randomUUID().slice(0, 8)}`;
    after(async () => {
      await dockerCli(["rm", "-f", "-v", name]);
    });

    it("loads from the saved tar and runs fred --version as a non-root user, with tini and a volume", async () => {
      const loaded = await dockerCli(["load", "-i", join(OUT, `fred-${VERSION}-image.tar`)], 300_000);
      assert.equal(loaded.code, 0, loaded.out);
      assert.match(loaded.out, new RegExp(`Loaded image: ${IMAGE}`));
      const version = await dockerCli(["run", "--rm", IMAGE, "--version"]);
      assert.equal(version.code, 0, version.out);
      assert.equal(version.out.trim(), versionLine());
      const inspect = await dockerCli(["image", "inspect", IMAGE, "--format", "{{json .Config}}"]);
      const config = JSON.parse(inspect.out) as {
        User: string;
        Entrypoint: string[];
        Volumes: Record<string, unknown>;
        Healthcheck: { Test: string[] };
      };
      assert.equal(config.User, "fred");
      assert.deepEqual(config.Entrypoint, ["tini", "--", "fred"]);
      assert.ok("/var/lib/fred" in config.Volumes, JSON.stringify(config.Volumes));
      assert.deepEqual(config.Healthcheck.Test, ["CMD", "node", "/opt/fred/healthcheck.mjs"]);
      const id = await dockerCli(["run", "--rm", "--entrypoint", "id", IMAGE, "-u"]);
      assert.notEqual(id.out.trim(), "0");
      // deploy/compose.yaml starts providerd through node with V8 flags of its own: that
      // entrypoint must exist in the image.
      const compose = parse(readFileSync(join(REPO_ROOT, "deploy", "compose.yaml"), "utf8")) as {
        services: { providerd: { entrypoint: string[] } };
      };
      const [first, ...rest] = compose.services.providerd.entrypoint;
      const viaCompose = await dockerCli([
        "run",
        "--rm",
        "--entrypoint",
        first!,
        IMAGE,
        ...rest,
        "--version",
      ]);
      assert.equal(viaCompose.code, 0, viaCompose.out);
      assert.equal(viaCompose.out.trim(), versionLine());
    });

    it("a fred up trial turns healthy, makes a lease ACTIVE, and stops cleanly on docker stop", async () => {
      // The image's own HEALTHCHECK command, asked every second instead of every 30 s.
      const started = await dockerCli(["run", "-d", "--name", name, "--health-interval", "1s", IMAGE, "up"]);
      assert.equal(started.code, 0, started.out);
      const health = async () =>
        (await dockerCli(["inspect", name, "--format", "{{.State.Health.Status}}"])).out.trim();
      await until(async () => (await health()) === "healthy", "the trial container to be healthy", {
        timeoutMs: 120_000,
        intervalMs: 500,
      });
      const exec = (args: string[]) => dockerCli(["exec", name, "fred", ...args], 60_000);
      // The walkthrough's own command, run where the trial's devnet home is.
      const created = await exec(
        "chain lease create --sku docker-small --from tenant1 --home .fred/devnet".split(" "),
      );
      assert.equal(created.code, 0, created.out);
      const lease = /"lease_uuid":"([0-9a-f-]{36})"/.exec(created.out)?.[1];
      assert.ok(lease, created.out);
      await until(
        async () =>
          (await exec(["chain", "lease", "show", lease])).out.includes('"state":"LEASE_STATE_ACTIVE"'),
        "the lease to become ACTIVE inside the container",
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      // The check can fail: asked of a port nothing listens on, it exits 1.
      const down = await dockerCli([
        "exec",
        "-e",
        "FRED_HEALTH_URL=http://127.0.0.1:1/health",
        name,
        "node",
        "/opt/fred/healthcheck.mjs",
      ]);
      assert.equal(down.code, 1, down.out);
      assert.match(down.out, /unhealthy: GET http:\/\/127\.0\.0\.1:1\/health/);
      // tini hands docker stop's SIGTERM to fred up, which stops every component and exits 0.
      const stopped = await dockerCli(["stop", "-t", "30", name], 60_000);
      assert.equal(stopped.code, 0, stopped.out);
      const exit = await dockerCli(["inspect", name, "--format", "{{.State.ExitCode}}"]);
      assert.equal(exit.out.trim(), "0", (await dockerCli(["logs", "--tail", "30", name])).out);
    });
  });

  describe("deploy/compose.yaml", () => {
    const noCompose = hasTool("docker-compose")
      ? false
      : "no docker-compose (apt-get install docker-compose)";
    if (noCompose && REQUIRE_DOCKER) throw new Error(`REQUIRE_DOCKER=1 but ${noCompose}`);

    it("its trial service runs fred up from the image, and a lease becomes ACTIVE", {
      skip: noCompose,
    }, async () => {
      const project = `fredship${randomUUID().slice(0, 8)}`;
      const compose = (args: string[]) =>
        run(
          "docker-compose",
          ["-p", project, "-f", join(REPO_ROOT, "deploy", "compose.yaml"), "--profile", "trial", ...args],
          {
            env: { ...process.env, FRED_IMAGE: IMAGE },
          },
        );
      const fredIn = (args: string[]) => compose(["exec", "-T", "trial", "fred", ...args]);
      try {
        const up = await compose(["up", "-d", "trial"]);
        assert.equal(up.code, 0, up.stderr);
        let lease = "";
        // The devnet inside takes a few seconds to answer: retry the walkthrough's command.
        await until(
          async () => {
            const created = await fredIn(
              "chain lease create --sku docker-small --from tenant1 --home .fred/devnet".split(" "),
            );
            lease = /"lease_uuid":"([0-9a-f-]{36})"/.exec(created.stdout)?.[1] ?? "";
            return lease !== "";
          },
          "a lease created in the compose trial",
          { timeoutMs: 90_000, intervalMs: 1000 },
        );
        await until(
          async () =>
            (await fredIn(["chain", "lease", "show", lease])).stdout.includes('"state":"LEASE_STATE_ACTIVE"'),
          "the compose trial's lease to become ACTIVE",
          { timeoutMs: 90_000, intervalMs: 500 },
        );
      } finally {
        const down = await compose(["down", "-v"]);
        assert.equal(down.code, 0, down.stderr);
      }
    });

    // The rest of this file needs no engine: let the next Docker file start.
    after(releaseEngineLock);
  });

  describe("the tarball installed globally, run from a clean PATH", () => {
    const prefix = join(scratch, "prefix");
    const home = join(scratch, "home");
    const nodeDir = dirname(process.execPath);
    // Only the installed fred and node: no checkout, no node_modules/.bin, no tsx.
    const cleanEnv = { ...passThrough(), HOME: home, PATH: `${prefix}/bin:${nodeDir}` };
    const state = join(scratch, "up");
    let up: Launched<true> | undefined;
    let keys: string[] = [];
    after(async () => {
      await up?.stop();
    });

    it("npm install -g --prefix installs it with production dependencies only", async () => {
      const started = Date.now();
      const r = await run(
        join(nodeDir, "npm"),
        ["install", "--global", "--prefix", prefix, "--no-audit", "--no-fund", "--no-update-notifier", TGZ],
        {
          cwd: scratch,
          // node-gyp compiles better-sqlite3 with python3, make and g++ from the system.
          env: {
            ...passThrough(),
            HOME: home,
            PATH: `${nodeDir}:/usr/bin:/bin`,
            npm_config_cache: join(process.env.HOME ?? home, ".npm"),
          },
          timeoutMs: 600_000,
        },
      );
      assert.equal(r.code, 0, r.stderr.slice(-4000));
      console.error(`# npm install -g took ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const installed = join(prefix, "lib", "node_modules", "fred");
      assert.ok(existsSync(join(installed, "lib", "fred.mjs")));
      assert.equal(existsSync(join(installed, "src")), false);
      for (const buildOnly of ["esbuild", "tsx", "typescript"]) {
        assert.equal(
          existsSync(join(installed, "node_modules", buildOnly)),
          false,
          `${buildOnly} was installed`,
        );
      }
    });

    it("fred --version", async () => {
      const r = await run("fred", ["--version"], { cwd: scratch, env: cleanEnv });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), versionLine());
    });

    it("fred backend docker loads its lazily imported chunk (dockerode) before it reads the config", async () => {
      const r = await run("fred", ["backend", "docker", "-c", join(scratch, "absent.yaml")], {
        env: cleanEnv,
      });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /docker backend config: cannot read .*absent\.yaml: ENOENT/);
    });

    it("fred up makes a lease ACTIVE", async () => {
      up = await launchProgram<true>("fred", ["up", "--home", state], {
        cwd: scratch,
        cleanEnv: true,
        env: cleanEnv,
        ready: (line, stream) =>
          stream === "stderr" && line.includes("Press Ctrl-C to stop.") ? true : undefined,
        readyTimeoutMs: 120_000,
      });
      const rpc = /devnet\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.stderr())?.[1];
      assert.ok(rpc, up.logTail());
      keys = ["--rpc", rpc, "--from", "tenant1", "--home", join(state, "devnet")];
      const created = await run("fred", ["chain", "lease", "create", "--sku", "docker-small", ...keys], {
        cwd: scratch,
        env: cleanEnv,
      });
      assert.equal(created.code, 0, created.stderr);
      const lease = JSON.parse(created.stdout).lease_uuid as string;
      await until(
        async () => {
          const shown = await run("fred", ["chain", "lease", "show", lease, "--rpc", rpc], { env: cleanEnv });
          return shown.code === 0 && JSON.parse(shown.stdout).state === "LEASE_STATE_ACTIVE";
        },
        "the lease to become ACTIVE",
        { timeoutMs: 90_000, intervalMs: 250 },
      );
    });

    it("fred lease deploy uploads a manifest and waits for the workload", async () => {
      assert.ok(up, "fred up is running");
      const manifest = join(scratch, "app.json");
      writeFileSync(
        manifest,
        JSON.stringify({ image: "docker.io/library/nginx:1.27", ports: { "80/tcp": {} } }),
      );
      const r = await run(
        "fred",
        ["lease", "deploy", "--sku", "docker-small", "--manifest", manifest, ...keys],
        {
          cwd: scratch,
          env: cleanEnv,
          timeoutMs: 180_000,
        },
      );
      assert.equal(r.code, 0, r.stderr);
      const status = JSON.parse(r.stdout) as { state: string; provision_status: string };
      assert.equal(status.state, "LEASE_STATE_ACTIVE");
      assert.equal(status.provision_status, "ready");
    });
  });
});
