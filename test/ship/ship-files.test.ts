import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { REQUIRE_DOCKER } from "../support/docker.ts";
import { REPO_ROOT, runFred } from "../support/index.ts";

/**
 * The files that make the image and the compose deployment agree with each other and with
 * the CLI, without building anything: the base image the Dockerfile names is the one
 * scripts/base-image.sh makes (same Node pin as CI), deploy/compose.yaml passes
 * `docker-compose config` (Debian's docker-compose; CI installs it, REQUIRE_DOCKER=1 makes
 * it required) and runs fred commands that exist on the image, volume and port the
 * Dockerfile declares.
 */
const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const dockerfile = read("Dockerfile");
const pkg = JSON.parse(read("package.json")) as { version: string };
const compose = parse(read("deploy/compose.yaml")) as {
  services: Record<
    string,
    {
      image: string;
      command: string[];
      volumes?: string[];
      environment?: Record<string, string>;
      userns_mode?: string;
      pid?: string;
    }
  >;
};

function hasTool(name: string): boolean {
  const found = spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
  if (!found && REQUIRE_DOCKER)
    throw new Error(`${name} is required here (REQUIRE_DOCKER=1) but not installed`);
  return found;
}

describe("Dockerfile and deploy/compose.yaml", () => {
  it("both stages start FROM the official Node image at CI's Node pin, which base-image.sh makes", () => {
    const pin = /FRED_NODE_VERSION="\$\{FRED_NODE_VERSION:-([0-9.]+)\}"/.exec(
      read(".ci/install-node.sh"),
    )?.[1];
    assert.ok(pin, "no Node pin in .ci/install-node.sh");
    assert.match(dockerfile, new RegExp(`^ARG NODE_VERSION=${pin.replaceAll(".", "\\.")}$`, "m"));
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    // The Dockerfile's own build argument, not a placeholder of this file.
    const official = `node:$\{NODE_VERSION}-bookworm-slim`;
    assert.deepEqual(froms, [official, official]);
    assert.match(read("scripts/base-image.sh"), /^TAG="node:\$\{FRED_NODE_VERSION\}-bookworm-slim"$/m);
  });

  it("runs as a non-root user under tini, with a HEALTHCHECK and state in a declared volume", () => {
    assert.match(dockerfile, /^USER fred$/m);
    assert.match(dockerfile, /^ENTRYPOINT \["tini", "--", "fred"\]$/m);
    assert.match(dockerfile, /^HEALTHCHECK .*\n\s+CMD \["node", "\/opt\/fred\/healthcheck\.mjs"\]$/m);
    assert.match(dockerfile, /^VOLUME \["\/var\/lib\/fred"\]$/m);
  });

  it("compose runs providerd, a Docker backend and a trial from the image, on its volume", async () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ["backend-docker", "providerd", "trial"]);
    for (const [name, service] of Object.entries(compose.services)) {
      assert.equal(service.image, `\${FRED_IMAGE:-fred:${pkg.version}}`, `${name}: image`);
      assert.ok(
        service.volumes?.some((v) => v.endsWith(":/var/lib/fred")),
        `${name} keeps its state in the image's volume`,
      );
      // The subcommand words are those before the first flag.
      const firstFlag = service.command.findIndex((a) => a.startsWith("-"));
      const words = firstFlag < 0 ? service.command : service.command.slice(0, firstFlag);
      const help = await runFred([...words, "--help"]);
      assert.equal(help.code, 0, `${name}: fred ${words.join(" ")} --help: ${help.stderr}`);
      for (const flag of service.command.filter((a) => a.startsWith("-")))
        assert.ok(help.stdout.includes(flag), `${name}: fred ${words.join(" ")} has no ${flag}`);
    }
    const backend = compose.services["backend-docker"];
    assert.ok(backend?.volumes?.includes("/var/run/docker.sock:/var/run/docker.sock"));
    // Under the engine's userns-remap the backend keeps host root and reads the remap ranges.
    assert.equal(backend?.userns_mode, "host");
    // A closed shell session's command is killed by its host PID (the engine cannot end it).
    assert.equal(backend?.pid, "host");
    for (const file of ["/etc/subuid", "/etc/subgid"])
      assert.ok(backend?.volumes?.includes(`${file}:${file}:ro`), `the backend reads ${file}`);
    assert.match(String(backend?.environment?.FRED_HEALTH_URL), /^http:\/\/127\.0\.0\.1:9001\/health$/);
  });

  it("compose passes docker-compose config", { skip: !hasTool("docker-compose") }, () => {
    const r = spawnSync(
      "docker-compose",
      ["-f", "deploy/compose.yaml", "--profile", "trial", "config", "-q"],
      {
        cwd: REPO_ROOT,
        encoding: "utf8",
      },
    );
    assert.equal(r.status, 0, r.stderr);
  });
});
