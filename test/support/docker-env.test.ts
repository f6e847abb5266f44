import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, it } from "node:test";
import { dockerdHost } from "./docker.ts";
import {
  builtImageTags,
  DOCKER_SOCKET,
  type DockerNeeds,
  type DockerState,
  dockerVerdict,
  ENABLE_HINT,
  imageTag,
  isBtrfs,
  NO_DOCKERD,
  NOT_ROOT,
  preparePlan,
  ROOT_HINT,
  TEST_IMAGES,
  testDockerHost,
  USERNS_HINT,
} from "./docker-env.ts";

/**
 * The Docker suites' preconditions: which suite runs, skips or fails on which machine, when
 * `npm test` prepares the missing pieces itself, and one real suite skipped at describe
 * level (never cancelled) when its btrfs root is not btrfs.
 */

const ROOT = "/srv/btrfs";
const ENGINE = `no Docker engine answers on ${DOCKER_SOCKET}`;
const MOUNT = `${ROOT} is not a btrfs mount`;
const ready: DockerState = {
  engine: true,
  btrfs: true,
  root: true,
  btrfsTools: true,
  dockerd: true,
  missingImages: [],
};
const user: DockerState = { ...ready, root: false };
const backend: DockerNeeds = { btrfs: true, images: ["httpd", "volume"] };
const up: DockerNeeds = { ownBtrfs: true };
const privateEngine: DockerNeeds = { btrfs: true, privateEngine: true, images: ["httpd"] };
const btrfsOnly: DockerNeeds = { engine: false, btrfs: true };

describe("dockerVerdict: one suite's needs against the machine", () => {
  const cases: [string, DockerState, DockerNeeds, boolean, ReturnType<typeof dockerVerdict>][] = [
    ["everything there", ready, backend, false, { run: true }],
    ["everything there, required", ready, backend, true, { run: true }],
    ["no engine", { ...ready, engine: false }, backend, false, { skip: `${ENGINE}; ${ENABLE_HINT}` }],
    [
      "no engine, required",
      { ...ready, engine: false },
      backend,
      true,
      { fail: `REQUIRE_DOCKER=1 but ${ENGINE}` },
    ],
    ["no mount", { ...ready, btrfs: false }, backend, false, { skip: `${MOUNT}; ${ENABLE_HINT}` }],
    [
      "no mount, required",
      { ...ready, btrfs: false },
      backend,
      true,
      { fail: `REQUIRE_DOCKER=1 but ${MOUNT}` },
    ],
    [
      "no mount, a suite without volumes",
      { ...ready, btrfs: false },
      { images: ["httpd"] },
      false,
      { run: true },
    ],
    ["not root, a suite with volumes", user, backend, false, { skip: `${NOT_ROOT}; ${ROOT_HINT}` }],
    ["not root, a suite without volumes", user, { images: ["httpd"] }, true, { run: true }],
    [
      "one of its images missing",
      { ...ready, missingImages: ["volume", "seeded"] },
      backend,
      false,
      { skip: `test images missing: fred-test/volume:1; ${ENABLE_HINT}` },
    ],
    [
      "only other suites' images missing",
      { ...ready, missingImages: ["seeded"] },
      backend,
      false,
      { run: true },
    ],
    [
      "mount and image missing",
      { ...ready, btrfs: false, missingImages: ["httpd"] },
      backend,
      true,
      { fail: `REQUIRE_DOCKER=1 but ${MOUNT}; test images missing: fred-test/httpd:1` },
    ],
    [
      "no engine: its images are not reported as well",
      { ...ready, engine: false, missingImages: ["httpd"] },
      backend,
      false,
      { skip: `${ENGINE}; ${ENABLE_HINT}` },
    ],
    ["fred up's own loopback, no shared mount needed", { ...ready, btrfs: false }, up, true, { run: true }],
    [
      "fred up's own loopback without btrfs-progs",
      { ...ready, btrfsTools: false },
      up,
      false,
      { skip: `no btrfs-progs (mkfs.btrfs, btrfs); ${ENABLE_HINT}` },
    ],
    ["fred up's own loopback, not root", user, up, true, { fail: `REQUIRE_DOCKER=1 but ${NOT_ROOT}` }],
    [
      "a private engine without dockerd",
      { ...ready, dockerd: false },
      privateEngine,
      false,
      {
        skip: `${NO_DOCKERD}; ${ENABLE_HINT}`,
      },
    ],
    [
      "a private engine without dockerd, required",
      { ...ready, dockerd: false },
      privateEngine,
      true,
      {
        fail: `REQUIRE_DOCKER=1 but ${NO_DOCKERD}`,
      },
    ],
    ["a private engine, not root", user, privateEngine, false, { skip: `${NOT_ROOT}; ${ROOT_HINT}` }],
    ["the btrfs-only suite without an engine", { ...ready, engine: false }, btrfsOnly, true, { run: true }],
    [
      "the btrfs-only suite without a mount",
      { ...ready, btrfs: false },
      btrfsOnly,
      false,
      { skip: `${MOUNT}; ${ENABLE_HINT}` },
    ],
  ];
  for (const [name, state, needs, required, want] of cases)
    it(name, () => assert.deepEqual(dockerVerdict(state, needs, required, ROOT, false), want));
});

describe("dockerVerdict: a suite that needs userns-remap", () => {
  const userns: DockerNeeds = { ...backend, userns: true };
  const plain = `the engine on ${DOCKER_SOCKET} does not remap user namespaces`;
  const cases: [string, DockerState, boolean, boolean, ReturnType<typeof dockerVerdict>][] = [
    ["a remapping engine", { ...ready, userns: true }, true, true, { run: true }],
    [
      "a plain engine: skips, saying how",
      { ...ready, userns: false },
      true,
      false,
      { skip: `${plain}; ${USERNS_HINT}` },
    ],
    [
      "a plain engine, REQUIRE_USERNS=1",
      { ...ready, userns: false },
      true,
      true,
      { fail: `REQUIRE_USERNS=1 but ${plain}` },
    ],
    ["not probed counts as plain", ready, false, false, { skip: `${plain}; ${USERNS_HINT}` }],
    [
      "no engine: the engine's own reason first",
      { ...ready, engine: false },
      false,
      true,
      { skip: `${ENGINE}; ${ENABLE_HINT}` },
    ],
  ];
  for (const [name, state, required, usernsRequired, want] of cases)
    it(name, () => assert.deepEqual(dockerVerdict(state, userns, required, ROOT, usernsRequired), want));
  it("a suite that does not ask for it runs on a plain engine even with REQUIRE_USERNS=1", () => {
    assert.deepEqual(dockerVerdict({ ...ready, userns: false }, backend, true, ROOT, true), { run: true });
  });
});

describe("the test engine and a dockerd's socket", () => {
  it("DOCKER_HOST names the engine when it is a unix socket", () => {
    assert.equal(
      testDockerHost("unix:///run/fred-userns/docker.sock"),
      "unix:///run/fred-userns/docker.sock",
    );
    assert.equal(testDockerHost(undefined), "unix:///var/run/docker.sock");
    assert.equal(testDockerHost("tcp://127.0.0.1:2375"), "unix:///var/run/docker.sock");
  });
  it("a dockerd command line's -H/--host, else the default socket", () => {
    const cases: [string[], string][] = [
      [["dockerd"], "unix:///var/run/docker.sock"],
      [["dockerd", "-H", "unix:///run/a.sock"], "unix:///run/a.sock"],
      [["dockerd", "--host", "unix:///run/b.sock"], "unix:///run/b.sock"],
      [["dockerd", "--host=unix:///run/c.sock"], "unix:///run/c.sock"],
      [["dockerd", "-Hunix:///run/d.sock"], "unix:///run/d.sock"],
      [["dockerd", "--host-gateway-ip=10.0.0.1"], "unix:///var/run/docker.sock"],
    ];
    for (const [argv, want] of cases) assert.equal(dockerdHost(argv), want, argv.join(" "));
  });
});

describe("preparePlan: what npm test does before the Docker suites", () => {
  const all = TEST_IMAGES.map(imageTag).join(" ");
  const skipped = "Docker suites skipped where they need it:";
  const cases: [string, DockerState, string[], boolean, ReturnType<typeof preparePlan>][] = [
    ["prepared: nothing to do", ready, ["mkfs.btrfs"], false, { action: "ready" }],
    ["no mount, root with the tools", { ...ready, btrfs: false }, [], false, { action: "prepare" }],
    [
      "images missing, root with the tools",
      { ...ready, missingImages: TEST_IMAGES },
      [],
      true,
      { action: "prepare" },
    ],
    [
      "no engine and no mount, root: the mount is still made",
      { ...ready, engine: false, btrfs: false },
      [],
      false,
      { action: "prepare" },
    ],
    [
      "no mount, not root",
      { ...user, btrfs: false },
      [],
      false,
      { action: "report", line: `${skipped} ${MOUNT}; ${NOT_ROOT}; ${ROOT_HINT}` },
    ],
    [
      "prepared, not root",
      user,
      [],
      false,
      { action: "report", line: `${skipped} ${NOT_ROOT}; ${ROOT_HINT}` },
    ],
    [
      "images missing, root without busybox",
      { ...ready, missingImages: TEST_IMAGES },
      ["/bin/busybox (busybox-static)"],
      false,
      {
        action: "report",
        line: `${skipped} test images missing: ${all} (npm test cannot prepare them without /bin/busybox (busybox-static)); ${ENABLE_HINT}`,
      },
    ],
    [
      "no engine: nothing npm test can prepare",
      { ...ready, engine: false },
      [],
      false,
      { action: "report", line: `${skipped} ${ENGINE}; ${ENABLE_HINT}` },
    ],
    [
      "image missing, not root, required",
      { ...user, missingImages: ["owned"] },
      [],
      true,
      {
        action: "report",
        line: `REQUIRE_DOCKER=1: the Docker suites will fail: ${NOT_ROOT}; test images missing: fred-test/owned:1`,
      },
    ],
  ];
  for (const [name, state, missingTools, required, want] of cases)
    it(name, () => assert.deepEqual(preparePlan(state, missingTools, required, ROOT), want));
});

describe("the test images", () => {
  it("are the ones images/build.sh builds", () => {
    const built = builtImageTags(new URL("../backend/docker/images/build.sh", import.meta.url).pathname);
    assert.deepEqual(built, TEST_IMAGES.map(imageTag));
  });
});

describe("a Docker suite whose btrfs root is not btrfs", () => {
  it("is skipped at describe level with the reason and how to enable it, nothing cancelled", () => {
    // A plain directory stands for an unprepared machine; the real mount is left alone, and
    // the suite runs without the runner, so nothing gets prepared at that path.
    const dir = mkdtempSync(`${tmpdir()}/fred-not-btrfs-`);
    try {
      assert.equal(isBtrfs(dir), false);
      const env: NodeJS.ProcessEnv = { ...process.env, FRED_TEST_BTRFS: dir };
      delete env.REQUIRE_DOCKER;
      delete env.NODE_TEST_CONTEXT; // else the child test runner refuses to run files inside ours
      const run = spawnSync(
        process.execPath,
        ["--import", "tsx", "--test", "--test-reporter=tap", "test/backend/docker/cli.test.ts"],
        { env, encoding: "utf8", timeout: 120_000 },
      );
      const out = `${run.stdout}${run.stderr}`;
      assert.equal(run.status, 0, out);
      // node:test counts a skipped describe as a suite whose tests never started. Run by a
      // user, "not root" joins the reason.
      const skipLine = /^ok 1 - fred backend docker \(CLI\) # SKIP (.*)$/m.exec(out)?.[1] ?? "";
      assert.ok(skipLine.startsWith(`${dir} is not a btrfs mount; `), out);
      assert.ok(skipLine.endsWith("or set REQUIRE_DOCKER=1 to fail instead"), out);
      for (const zero of ["tests", "fail", "cancelled"])
        assert.match(out, new RegExp(`^# ${zero} 0$`, "m"), out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
