import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  chownSync,
  lchownSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pino from "pino";
import { assertBtrfsWithQuotas, BtrfsVolumes } from "../../../src/backend/docker/btrfs-volumes.ts";
import { DockerSubstrate } from "../../../src/backend/docker/docker-substrate.ts";
import { connectDocker } from "../../../src/backend/docker/engine.ts";
import { instanceName, volumeDirName } from "../../../src/backend/docker/names.ts";
import { RetainedVolumes } from "../../../src/backend/docker/retention/retained-volumes.ts";
import {
  engineIdShift,
  engineRemapRoot,
  IdShift,
  idShiftOf,
  parseSubIds,
  rangesFor,
  usernsVerdict,
} from "../../../src/backend/docker/userns.ts";
import type { InstanceSpec, SkuProfile, WorkloadSpec } from "../../../src/backend/kit/substrate.ts";
import { systemClock } from "../../../src/core/clock.ts";
import { isFredError } from "../../../src/core/errors.ts";
import { createLogger, type Logger } from "../../../src/log.ts";
import {
  btrfsSkip,
  dockerSkip,
  engineAnswers,
  execIn,
  scratchVolumeRoot,
  engineIdShift as testEngineIds,
} from "../../support/docker.ts";
import { deleteSubvolumes } from "./helpers.ts";
import { substrateConfig, workloadSpec } from "./substrate-helper.ts";

/**
 * Container root is not host root: the id shift's pure parts (subordinate-id files, the
 * engine's data root, the startup verdict), then a real engine started with
 * --userns-remap: the container's uid_map, and the host owners of what a container and
 * the backend put into volumes (plain, seeded, owned by the image's non-root user). Last,
 * production_mode against the default engine: refused there when it does not remap.
 */

describe("subordinate-id files", () => {
  it("parses name:start:count lines, skipping blanks and comments", () => {
    const text = "# ranges\n\ndockremap:100000:65536\n  alice:165536:65536  \n1000:231072:65536\n";
    assert.deepEqual(parseSubIds(text), {
      entries: [
        { user: "dockremap", start: 100000, count: 65536 },
        { user: "alice", start: 165536, count: 65536 },
        { user: "1000", start: 231072, count: 65536 },
      ],
      bad: [],
    });
  });

  const badLines: [string, string][] = [
    ["two fields", "dockremap:100000"],
    ["four fields", "dockremap:100000:65536:1"],
    ["no name", ":100000:65536"],
    ["a sign", "dockremap:-1:65536"],
    ["hex", "dockremap:0x10:65536"],
    ["an empty count", "dockremap:100000:"],
    ["a zero count", "dockremap:100000:0"],
    ["past the 32-bit id space", "dockremap:4294967000:65536"],
    ["space inside", "dock remap:100000:65536"],
  ];
  for (const [what, line] of badLines) {
    it(`reports a line with ${what} by its number`, () => {
      assert.deepEqual(parseSubIds(`ok:1:1\n${line}\n`).bad, [2]);
    });
  }
});

describe("the remap user's ranges", () => {
  it("one range: container 0.. is host start..", () => {
    assert.deepEqual(rangesFor("dockremap:100000:65536\n", "/etc/subuid", 100000), [
      { container: 0, host: 100000, size: 65536 },
    ]);
  });

  it("several ranges of the user laid end to end in host order; other users ignored", () => {
    const text = "other:100000:1000\ndockremap:300000:10\ndockremap:200000:100\n";
    assert.deepEqual(rangesFor(text, "/etc/subuid", 200000), [
      { container: 0, host: 200000, size: 100 },
      { container: 100, host: 300000, size: 10 },
    ]);
  });

  const refusals: [string, string, number, RegExp][] = [
    [
      "no range starts at the engine's root",
      "dockremap:100000:65536\n",
      200000,
      /no range in \/etc\/subuid starts there/,
    ],
    ["a bad line", "dockremap:100000:65536\nbroken\n", 100000, /line 2 is not name:start:count/],
    ["the user has a lower range", "u:100000:10\nu:50000:10\n", 100000, /has a range below 100000/],
  ];
  for (const [what, text, root, message] of refusals) {
    it(`refuses: ${what}`, () => {
      assert.throws(
        () => rangesFor(text, "/etc/subuid", root),
        (err) => isFredError(err, "ERR_USERNS") && message.test(err.message),
      );
    });
  }
});

describe("IdShift", () => {
  const shift = new IdShift({
    uids: [
      { container: 0, host: 100000, size: 100 },
      { container: 100, host: 300000, size: 10 },
    ],
    gids: [{ container: 0, host: 500000, size: 65536 }],
  });
  const cases: [string, IdShift, [number, number], [number, number] | "unmapped"][] = [
    ["no remap: ids as they are", IdShift.none, [0, 0], [0, 0]],
    ["no remap: any id", IdShift.none, [4_000_000, 7], [4_000_000, 7]],
    ["root", shift, [0, 0], [100000, 500000]],
    ["inside the first range", shift, [99, 1000], [100099, 501000]],
    ["into the second range", shift, [100, 1], [300000, 500001]],
    ["last id of the map", shift, [109, 65535], [300009, 565535]],
    ["uid past the map", shift, [110, 0], "unmapped"],
    ["gid past the map", shift, [0, 65536], "unmapped"],
  ];
  for (const [what, ids, [uid, gid], want] of cases) {
    it(what, () => {
      if (want === "unmapped") {
        assert.throws(
          () => ids.toHost({ uid, gid }),
          (err) => isFredError(err, "ERR_USERNS_UNMAPPED"),
        );
      } else {
        assert.deepEqual(ids.toHost({ uid, gid }), { uid: want[0], gid: want[1] });
      }
    });
  }
  it("remapped and root", () => {
    assert.equal(IdShift.none.remapped, false);
    assert.deepEqual(IdShift.none.root, { uid: 0, gid: 0 });
    assert.equal(shift.remapped, true);
    assert.deepEqual(shift.root, { uid: 100000, gid: 500000 });
  });
});

describe("what docker info says", () => {
  const infos: [string, Record<string, unknown>, { uid: number; gid: number } | undefined | "refused"][] = [
    [
      "no userns option",
      { SecurityOptions: ["name=seccomp,profile=default"], DockerRootDir: "/var/lib/docker" },
      undefined,
    ],
    ["no options at all", {}, undefined],
    [
      "userns with the remapped data root",
      {
        SecurityOptions: ["name=seccomp,profile=default", "name=userns"],
        DockerRootDir: "/var/lib/docker/100000.100000",
      },
      { uid: 100000, gid: 100000 },
    ],
    [
      "userns, gid apart",
      { SecurityOptions: ["name=userns"], DockerRootDir: "/srv/d/231072.300000/" },
      { uid: 231072, gid: 300000 },
    ],
    [
      "userns but a data root without ids",
      { SecurityOptions: ["name=userns"], DockerRootDir: "/var/lib/docker" },
      "refused",
    ],
  ];
  for (const [what, info, want] of infos) {
    it(what, () => {
      if (want === "refused")
        assert.throws(
          () => engineRemapRoot(info),
          (err) => isFredError(err, "ERR_USERNS"),
        );
      else assert.deepEqual(engineRemapRoot(info), want);
    });
  }

  it("the shift reads the ranges of the user whose range starts at the engine's root", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fred-subid-"));
    try {
      writeFileSync(join(dir, "subuid"), "a:10000:5\ndockremap:100000:65536\n");
      writeFileSync(join(dir, "subgid"), "dockremap:200000:65536\n");
      const files = { subuid: join(dir, "subuid"), subgid: join(dir, "subgid") };
      const info = { SecurityOptions: ["name=userns"], DockerRootDir: "/var/lib/docker/100000.200000" };
      const shift = await idShiftOf(info, files);
      assert.deepEqual(shift.toHost({ uid: 1000, gid: 1000 }), { uid: 101000, gid: 201000 });
      assert.equal(await idShiftOf({ SecurityOptions: [] }, files), IdShift.none);
      await assert.rejects(
        idShiftOf(info, { ...files, subgid: join(dir, "missing") }),
        (err) => isFredError(err, "ERR_USERNS") && /cannot be read/.test(err.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the startup verdict", () => {
  const host = "unix:///var/run/docker.sock";
  it("a remapping engine is fine in either mode", () => {
    assert.deepEqual(usernsVerdict(true, true, host), { ok: true });
    assert.deepEqual(usernsVerdict(true, false, host), { ok: true });
  });
  it("production_mode refuses a plain engine, saying how to enable remapping", () => {
    const v = usernsVerdict(false, true, host);
    assert.ok("refuse" in v);
    assert.match(v.refuse, /production_mode requires userns-remap/);
    assert.match(v.refuse, /"userns-remap": "default" in \/etc\/docker\/daemon\.json/);
    assert.match(v.refuse, /unix:\/\/\/var\/run\/docker\.sock/);
  });
  it("development warns on a plain engine", () => {
    const v = usernsVerdict(false, false, host);
    assert.ok("warn" in v);
    assert.match(v.warn, /root in a tenant container is root on the host/);
  });
});

/** A logger that keeps the message of each WARN line it writes. */
function capturingLogger(): { log: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const log = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
  return { log, warnings };
}

describe("volumes made under another id map", { skip: btrfsSkip() }, () => {
  const storageId = randomUUID();
  const remap = new IdShift({
    uids: [{ container: 0, host: 100000, size: 65536 }],
    gids: [{ container: 0, host: 200000, size: 65536 }],
  });
  const signal = new AbortController().signal;
  let scratch: ReturnType<typeof scratchVolumeRoot>;
  before(() => {
    scratch = scratchVolumeRoot("reown");
  });
  after(async () => {
    if (!scratch) return;
    await deleteSubvolumes(scratch.path);
    await deleteSubvolumes(join(scratch.path, ".fred-retained"));
    rmSync(scratch.path, { recursive: true, force: true });
  });

  const owner = (path: string) => {
    const st = lstatSync(path);
    return `${st.uid}:${st.gid}`;
  };
  /** A volume made on a plain engine: root's file, the app user's file, a link out. */
  async function plainVolume(lease: string): Promise<string> {
    const plain = new BtrfsVolumes(scratch.path, storageId, IdShift.none);
    const dirs = await plain.ensure(
      instanceName(lease, "db", 0),
      { storageId, leaseUuid: lease },
      16,
      ["d"],
      undefined,
    );
    const dir = dirs.get("d") as string;
    writeFileSync(join(dir, "root.txt"), "r");
    writeFileSync(join(dir, "app.txt"), "a");
    chownSync(join(dir, "app.txt"), 1000, 1000);
    symlinkSync("/etc/passwd", join(dir, "out"));
    lchownSync(join(dir, "out"), 1000, 1000);
    return dir;
  }

  it("remapping switched on: every owner moves to the remapped ids, once; switched off: back", async () => {
    const lease = randomUUID();
    const dir = await plainVolume(lease);
    const name = instanceName(lease, "db", 0);
    const passwd = owner("/etc/passwd");
    const remapped = new BtrfsVolumes(scratch.path, storageId, remap);
    await remapped.ensure(name, { storageId, leaseUuid: lease }, 16, ["d"], undefined);
    const moved = {
      d: owner(dir),
      root: owner(join(dir, "root.txt")),
      app: owner(join(dir, "app.txt")),
      out: owner(join(dir, "out")),
    };
    assert.deepEqual(moved, {
      d: "100000:200000",
      root: "100000:200000",
      app: "101000:201000",
      out: "101000:201000",
    });
    assert.equal(owner("/etc/passwd"), passwd, "a link's target is never followed");
    const record = JSON.parse(readFileSync(join(remapped.pathOf(name), ".fred-owner.json"), "utf8"));
    assert.deepEqual(record.root, { uid: 100000, gid: 200000 });
    assert.equal(
      owner(join(remapped.pathOf(name), ".fred-owner.json")),
      "0:0",
      "bookkeeping stays host root's",
    );
    // A crash before the record was written: the move runs again and changes nothing.
    writeFileSync(
      join(remapped.pathOf(name), ".fred-owner.json"),
      JSON.stringify({ storageId, leaseUuid: lease }),
    );
    await remapped.ensure(name, { storageId, leaseUuid: lease }, 16, ["d"], undefined);
    assert.equal(owner(join(dir, "app.txt")), "101000:201000");
    assert.equal(owner(join(dir, "root.txt")), "100000:200000");
    const plain = new BtrfsVolumes(scratch.path, storageId, IdShift.none);
    await plain.ensure(name, { storageId, leaseUuid: lease }, 16, ["d"], undefined);
    assert.equal(owner(join(dir, "app.txt")), "1000:1000");
    assert.equal(owner(join(dir, "root.txt")), "0:0");
  });

  it("a copy retained on a plain engine is restored with the remapped owners", async () => {
    const source = randomUUID();
    const target = randomUUID();
    await plainVolume(source);
    const instance = (lease: string): InstanceSpec => ({
      key: `${lease}-db-0`,
      service: "db",
      index: 0,
      sku: randomUUID(),
      profile: { cpu_cores: 0.1, memory_mb: 32, disk_mb: 16 },
    });
    const plainRetained = new RetainedVolumes(
      new BtrfsVolumes(scratch.path, storageId, IdShift.none),
      storageId,
    );
    const set = await plainRetained.retain(source, [instance(source)], signal);
    const remapped = new BtrfsVolumes(scratch.path, storageId, remap);
    const spec = { leaseUuid: target, instances: [instance(target)] } as unknown as WorkloadSpec;
    await new RetainedVolumes(remapped, storageId).adopt(source, set.volumes, spec, signal);
    const dir = join(remapped.pathOf(instanceName(target, "db", 0)), "d");
    assert.equal(owner(join(dir, "app.txt")), "101000:201000");
    assert.equal(owner(join(dir, "root.txt")), "100000:200000");
  });
});

const DEFAULT_HOST = "unix:///var/run/docker.sock";
const defaultEngine = connectDocker(DEFAULT_HOST);
const defaultUp = await engineAnswers(defaultEngine);

describe("production_mode on the default engine", {
  skip: defaultUp ? false : `no engine on ${DEFAULT_HOST}`,
}, () => {
  it("starts only when that engine remaps (refused with how to enable it otherwise); development warns", async () => {
    const remaps = ((await defaultEngine.info()) as { SecurityOptions?: string[] }).SecurityOptions?.includes(
      "name=userns",
    );
    const opts = { dockerHost: DEFAULT_HOST, clock: systemClock };
    const prod = capturingLogger();
    const dev = capturingLogger();
    if (remaps) {
      const ids = await engineIdShift(defaultEngine, { ...opts, productionMode: true, log: prod.log });
      assert.equal(ids.remapped, true);
      assert.notEqual(ids.root.uid, 0);
    } else {
      await assert.rejects(
        engineIdShift(defaultEngine, { ...opts, productionMode: true, log: prod.log }),
        (err) =>
          isFredError(err, "ERR_USERNS") &&
          err.message.includes('"userns-remap": "default" in /etc/docker/daemon.json') &&
          err.message.includes("production_mode requires userns-remap"),
      );
      const ids = await engineIdShift(defaultEngine, { ...opts, productionMode: false, log: dev.log });
      assert.equal(ids, IdShift.none);
      assert.equal(dev.warnings.length, 1);
      assert.match(dev.warnings[0] ?? "", /does not remap user namespaces/);
    }
  });
});

const skip = await dockerSkip({ btrfs: true, images: ["volume", "seeded", "owned"], userns: true });

describe("docker substrate under userns-remap", { skip }, () => {
  const storageId = randomUUID();
  const scratch = skip ? undefined : scratchVolumeRoot("userns");
  const config = substrateConfig(scratch?.path);
  const signal = new AbortController().signal;
  const durable: SkuProfile = { cpu_cores: 0.25, memory_mb: 64, disk_mb: 16 };
  const made: WorkloadSpec[] = [];
  let substrate: DockerSubstrate;
  let ids: IdShift;

  before(async () => {
    await assertBtrfsWithQuotas(config.volumeDataPath);
    ids = await testEngineIds();
    substrate = new DockerSubstrate({
      config,
      storageId,
      docker: connectDocker(config.dockerHost),
      clock: systemClock,
      log: createLogger("test-userns", "silent"),
      volumes: new BtrfsVolumes(config.volumeDataPath, storageId, ids),
      ids,
    });
  });
  after(async () => {
    for (const s of made) await substrate?.destroyLease(s.leaseUuid, signal).catch(() => {});
    await substrate?.close();
    scratch?.remove();
  });

  async function run(image: string): Promise<{ container: string; data: string }> {
    const s = workloadSpec({ storageId, services: { app: { image } }, profile: durable });
    made.push(s);
    await substrate.validate(s);
    await substrate.create(s, signal);
    await substrate.start(s, signal);
    const container = instanceName(s.leaseUuid, "app", 0);
    return { container, data: join(config.volumeDataPath, container, volumeDirName("/data")) };
  }

  const hostOwner = (path: string) => {
    const st = statSync(path);
    return { uid: st.uid, gid: st.gid };
  };

  it("the container's uid_map is the remap, and container root's file is the remapped uid on the host", async () => {
    assert.equal(ids.remapped, true);
    assert.notEqual(ids.root.uid, 0, "container root is not host root");
    const { container, data } = await run("fred-test/volume:1");
    const map = await execIn(container, "cat /proc/self/uid_map");
    assert.equal(map.code, 0, map.out);
    const fields = map.out.trim().split(/\s+/).map(Number);
    assert.notDeepEqual(fields, [0, 0, 4294967295], "not the identity map");
    assert.deepEqual(fields.slice(0, 2), [0, ids.root.uid], "container uid 0 is the remap's first host uid");
    const write = await execIn(
      container,
      "id -u && echo mine > /data/root-wrote.txt && stat -c %u:%g /data/root-wrote.txt",
    );
    assert.equal(write.code, 0, write.out);
    assert.equal(write.out, "0\n0:0\n", "inside, root wrote it as root");
    assert.deepEqual(
      hostOwner(join(data, "root-wrote.txt")),
      ids.root,
      "on the host, the remapped root owns it",
    );
    assert.deepEqual(hostOwner(data), ids.root, "the VOLUME directory is container root's");
    const outside = await execIn(
      container,
      "echo x > /proc/sys/kernel/hostname 2>&1; echo x > /etc/passwd 2>&1",
    );
    assert.notEqual(outside.code, 0, "nothing outside its volume is writable");
  });

  it("a seeded volume keeps the image's owners, shifted, and is writable by its user", async () => {
    const { container, data } = await run("fred-test/seeded:1");
    assert.deepEqual(hostOwner(join(data, "hello.txt")), ids.toHost({ uid: 0, gid: 0 }));
    assert.deepEqual(hostOwner(join(data, "secret.txt")), ids.toHost({ uid: 1000, gid: 1000 }));
    assert.deepEqual(hostOwner(data), ids.toHost({ uid: 1000, gid: 1000 }));
    const inside = await execIn(
      container,
      "stat -c %u:%g /data/hello.txt /data/secret.txt && echo new > /data/new.txt",
    );
    assert.equal(inside.code, 0, inside.out);
    assert.equal(inside.out, "0:0\n1000:1000\n", "inside, the image's own ids");
  });

  it("an owned image runs as its VOLUME owner, whose uid is shifted on the host", async () => {
    const { container, data } = await run("fred-test/owned:1");
    const w = await execIn(container, "id -u && echo kept > /data/probe && stat -c %u:%g /data/probe");
    assert.equal(w.code, 0, w.out);
    assert.equal(w.out, "1000\n1000:1000\n");
    assert.deepEqual(hostOwner(data), ids.toHost({ uid: 1000, gid: 1000 }));
    assert.deepEqual(hostOwner(join(data, "probe")), { uid: ids.root.uid + 1000, gid: ids.root.gid + 1000 });
  });
});
