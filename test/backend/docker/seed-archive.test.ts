import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  readArchiveTop,
  SEED_FAILED,
  SEED_TOO_LARGE,
  type SeedLimits,
  vetArchive,
} from "../../../src/backend/docker/seed-archive.ts";
import { IdShift } from "../../../src/backend/docker/userns.ts";
import { SubstrateError } from "../../../src/backend/kit/substrate.ts";

/**
 * The seed archive vetting on hand-made archives: every header form a tar writer may use
 * (ustar prefix, GNU long names, pax records, base-256 numbers) and every refusal (caps,
 * absolute and `..` names, devices, unknown types, bad checksums). Two seeded fast-check
 * properties: archives built from a member model are refused exactly when the model says
 * so and otherwise come out as GNU tar lists them; randomly corrupted archives are either
 * refused with a definite seed error or come out as an archive GNU tar reads that obeys
 * every rule. `FUZZ_SEED=<n>` replays a run.
 */

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);

type Kind = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "S";
type NameForm = "plain" | "prefix" | "gnu" | "pax";
type SizeForm = "octal" | "base256" | "pax";

interface Member {
  name: string;
  kind: Kind;
  data: Buffer;
  link: string;
  nameForm: NameForm;
  sizeForm: SizeForm;
  uid: number;
  badChecksum: boolean;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\u0000`;
}

/** One 512-byte header; `size` as octal or GNU base-256; checksum right or off by one. */
function header(name: string, kind: string, size: number, opts: Partial<Member> = {}): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, "utf8");
  h.write(octal(kind === "5" ? 0o755 : 0o640, 8), 100, "latin1");
  h.write(octal(opts.uid ?? 0, 8), 108, "latin1");
  h.write(octal(0, 8), 116, "latin1");
  if (opts.sizeForm === "base256") {
    h[124] = 0x80;
    h.writeUIntBE(size, 136 - 6, 6);
  } else {
    h.write(octal(size, 12), 124, "latin1");
  }
  h.write(octal(1_700_000_000, 12), 136, "latin1");
  h.write(kind, 156, "latin1");
  h.write(opts.link ?? "", 157, 100, "utf8");
  h.write("ustar\u000000", 257, "latin1");
  seal(h, opts.badChecksum ?? false);
  return h;
}

/** Writes the header's checksum (or one that is off by one). */
function seal(h: Buffer, bad = false): void {
  h.write("        ", 148, "latin1");
  let sum = 0;
  for (const b of h.subarray(0, 512)) sum += b;
  if (bad) sum += 1;
  h.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, "latin1");
}

function padded(data: Buffer): Buffer[] {
  return [data, Buffer.alloc((512 - (data.length % 512)) % 512)];
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length++;
  return `${length}${body}`;
}

/** A whole archive, byte for byte, so tests can build archives no file system holds. */
function tarOf(members: readonly Member[]): Buffer {
  return tarLayout(members).bytes;
}

/** The archive and the offset of every header block in it (meta headers included). */
function tarLayout(members: readonly Member[]): { bytes: Buffer; headers: number[] } {
  const parts: Buffer[] = [];
  const headers: number[] = [];
  let at = 0;
  const push = (head: Buffer, ...rest: Buffer[]) => {
    headers.push(at);
    for (const b of [head, ...rest]) {
      parts.push(b);
      at += b.length;
    }
  };
  for (const m of members) {
    const size = m.data.length;
    let name = m.name;
    const pax: string[] = [];
    if (m.nameForm === "gnu") {
      const long = Buffer.from(`${m.name}\u0000`);
      push(header("././@LongLink", "L", long.length), ...padded(long));
      name = "placeholder";
    } else if (m.nameForm === "pax") {
      pax.push(paxRecord("path", m.name));
      name = "placeholder";
    } else if (m.nameForm === "prefix") {
      name = m.name.slice(m.name.lastIndexOf("/") + 1);
    }
    if (m.sizeForm === "pax") pax.push(paxRecord("size", String(size)));
    if (pax.length > 0) {
      const records = Buffer.from(pax.join(""));
      push(header("PaxHeader", "x", records.length), ...padded(records));
    }
    const h = header(name, m.kind, m.sizeForm === "pax" ? 0 : size, m);
    if (m.nameForm === "prefix") {
      const cut = m.name.lastIndexOf("/");
      h.write(cut > 0 ? m.name.slice(0, cut) : "", 345, 155, "utf8");
      seal(h, m.badChecksum);
    }
    push(h, ...padded(m.kind === "0" || m.kind === "7" || m.kind === "S" ? m.data : Buffer.alloc(0)));
  }
  parts.push(Buffer.alloc(1024));
  return { bytes: Buffer.concat(parts), headers };
}

function member(
  m: Partial<Omit<Member, "data">> & Pick<Member, "name" | "kind"> & { data?: string },
): Member {
  return {
    link: "",
    nameForm: "plain",
    sizeForm: "octal",
    uid: 0,
    badChecksum: false,
    ...m,
    data: Buffer.from(m.data ?? ""),
  };
}

/** GNU tar's C-style quoting undone (`--quoting-style=c`). */
function cUnquote(text: string): string {
  const named: Record<string, string> = { n: "\n", t: "\t", r: "\r", a: "\x07", b: "\b", f: "\f", v: "\v" };
  return text.replace(/\\([0-7]{3}|.)/g, (_, e: string) =>
    /^[0-7]{3}$/.test(e) ? String.fromCharCode(Number.parseInt(e, 8)) : (named[e] ?? e),
  );
}

/** What the vetting is expected to do with a model archive. */
function expected(members: readonly Member[], limits: SeedLimits): string {
  let entries = 0;
  let bytes = 0;
  const unsafe = (n: string) => n.startsWith("/") || n.split("/").includes("..");
  for (const m of members) {
    if (m.badChecksum) return SEED_FAILED;
    if (++entries > limits.maxEntries) return SEED_TOO_LARGE;
    if (unsafe(m.name) || (m.kind === "1" && unsafe(m.link))) return SEED_FAILED;
    if (m.kind === "3" || m.kind === "4" || m.kind === "S") return SEED_FAILED;
    bytes += m.kind === "0" || m.kind === "7" ? m.data.length : 0;
    if (bytes > limits.maxBytes) return SEED_TOO_LARGE;
  }
  return "ok";
}

function tally(seen: Map<string, number>, outcome: string): void {
  seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Runs the vetting; "ok" with the output archive, or the definite reason it refused. */
async function vet(archive: Buffer, limits: SeedLimits): Promise<{ outcome: string; output?: Buffer }> {
  const { output } = vetArchive(Readable.from([archive]), limits, IdShift.none);
  try {
    return { outcome: "ok", output: await drain(output) };
  } catch (err) {
    if (err instanceof SubstrateError && err.outcome === "definite") return { outcome: err.reason };
    throw err;
  }
}

interface Listed {
  type: string;
  size: number;
  name: string;
}

/** The archive as GNU tar reads it (`tar -tv`, names exactly as stored). */
function gnuList(archive: Buffer): Promise<Listed[]> {
  return new Promise((resolve, reject) => {
    const tar = spawn("tar", ["-t", "-v", "-P", "--numeric-owner", "--quoting-style=c", "-f", "-"]);
    let out = "";
    let err = "";
    tar.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    tar.stderr.on("data", (d: Buffer) => {
      err += d.toString("utf8");
    });
    tar.on("error", reject);
    tar.on("close", (code) => {
      if (code !== 0) return reject(new Error(`tar -t exited with ${code}: ${err}`));
      const rows: Listed[] = [];
      for (const line of out.split("\n").filter(Boolean)) {
        const m = /^(.)\S*\s+\d+\/\d+\s+(\S+)\s+\S+\s+\S+\s+"((?:[^"\\]|\\.)*)"/.exec(line);
        if (!m) return reject(new Error(`unparsed tar listing line: ${line}`));
        rows.push({ type: m[1] as string, size: Number(m[2]), name: cUnquote(m[3] as string) });
      }
      resolve(rows);
    });
    tar.stdin.on("error", () => {});
    tar.stdin.end(archive);
  });
}

/** Mostly safe names, so that many archives pass; now and then an absolute or `..` one. */
const segment = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("data", "a", "b", "c", ".", "x.txt", "deep") },
  { weight: 1, arbitrary: fc.constant("..") },
);
const nameArb = fc
  .tuple(fc.nat(15), fc.array(segment, { minLength: 1, maxLength: 4 }), fc.nat(3))
  .map(([absolute, segs, long]) => {
    // Now and then a name past the 100-byte ustar field.
    const parts = long === 0 ? [...segs, "l".repeat(60), "m".repeat(60)] : segs;
    return `${absolute === 0 ? "/" : ""}${parts.join("/")}`;
  });
const memberArb: fc.Arbitrary<Member> = fc.record({
  name: nameArb,
  kind: fc.oneof(
    { weight: 20, arbitrary: fc.constantFrom<Kind>("0", "0", "0", "5", "5", "1", "2", "6", "7") },
    { weight: 1, arbitrary: fc.constantFrom<Kind>("3", "4", "S") },
  ),
  data: fc.uint8Array({ maxLength: 700 }).map((a) => Buffer.from(a)),
  link: fc.oneof(nameArb, fc.constant("data/a")),
  nameForm: fc.constantFrom<NameForm>("plain", "prefix", "gnu", "pax"),
  sizeForm: fc.constantFrom<SizeForm>("octal", "base256", "pax"),
  uid: fc.constantFrom(0, 1000, 65534),
  badChecksum: fc.nat(29).map((n) => n === 0),
});
/** Members the archive can actually express: a short-field name fits, data only on files. */
const fitting = (m: Member): Member => {
  const lastSlash = m.name.lastIndexOf("/");
  const fitsPrefix = lastSlash > 0 && lastSlash <= 155 && m.name.length - lastSlash - 1 <= 100;
  let nameForm = m.nameForm;
  if (nameForm === "plain" && Buffer.byteLength(m.name) > 99) nameForm = "pax";
  if (nameForm === "prefix" && !fitsPrefix) nameForm = "gnu";
  const hasData = m.kind === "0" || m.kind === "7" || m.kind === "S";
  return {
    ...m,
    nameForm,
    data: hasData ? m.data : Buffer.alloc(0),
    link: m.kind === "1" || m.kind === "2" ? m.link.slice(0, 99) : "",
    // A file name ending in "/" is a directory to every reader.
    name: m.kind === "5" ? m.name : m.name.replace(/\/+$/, "") || "f",
  };
};
const limitsArb = fc.record({
  maxBytes: fc.integer({ min: 0, max: 3000 }),
  maxEntries: fc.integer({ min: 1, max: 8 }),
});

describe("seed archive vetting", () => {
  it("takes every header form and reports the top directory", async () => {
    const members: Member[] = [
      member({ name: "data/", kind: "5", uid: 1000 }),
      member({ name: "data/plain.txt", kind: "0", data: "alpha" }),
      member({ name: `data/${"p".repeat(90)}/prefixed.txt`, kind: "0", nameForm: "prefix", data: "beta" }),
      member({ name: `data/${"g".repeat(120)}`, kind: "0", nameForm: "gnu", data: "gamma" }),
      member({ name: `data/${"x".repeat(130)}`, kind: "0", nameForm: "pax", sizeForm: "pax", data: "delta" }),
      member({ name: "data/big256", kind: "0", sizeForm: "base256", data: "epsilon" }),
      member({ name: "data/hard", kind: "1", link: "data/plain.txt" }),
      member({ name: "data/soft", kind: "2", link: "/etc/passwd" }),
      member({ name: "data/pipe", kind: "6" }),
    ];
    const archive = tarOf(members);
    const { output, summary } = vetArchive(
      Readable.from([archive]),
      { maxBytes: 1 << 20, maxEntries: 100 },
      IdShift.none,
    );
    const listed = await gnuList(await drain(output));
    assert.deepEqual(
      listed.map((l) => l.name),
      members.map((m) => m.name),
    );
    assert.deepEqual(summary.top, { mode: 0o755, uid: 1000, gid: 0 });
    assert.equal(summary.bytes, 5 + 4 + 5 + 5 + 7);
    assert.deepEqual(await readArchiveTop(Readable.from([archive]), IdShift.none), {
      mode: 0o755,
      uid: 1000,
      gid: 0,
    });
    // Under userns-remap the archive holds host ids; the top reports what they are inside.
    const remap = new IdShift({
      uids: [{ container: 0, host: 0, size: 65_536 }],
      gids: [{ container: 0, host: 0, size: 65_536 }],
    });
    assert.deepEqual((await readArchiveTop(Readable.from([archive]), remap))?.uid, 1000);
    const shifted = new IdShift({
      uids: [{ container: 0, host: 500, size: 65_536 }],
      gids: [{ container: 0, host: 0, size: 65_536 }],
    });
    assert.deepEqual(await readArchiveTop(Readable.from([archive]), shifted), {
      mode: 0o755,
      uid: 500,
      gid: 0,
    });
  });

  it("refuses a bad checksum, a device, an unknown type and an unsafe hard link target", async () => {
    const cases: [string, Member][] = [
      ["checksum", member({ name: "data/f", kind: "0", badChecksum: true })],
      ["device", member({ name: "data/tty", kind: "3" })],
      ["unknown type", member({ name: "data/sparse", kind: "S" })],
      ["hard link out", member({ name: "data/h", kind: "1", link: "../etc/shadow" })],
    ];
    for (const [what, m] of cases) {
      const r = await vet(tarOf([m]), { maxBytes: 100, maxEntries: 10 });
      assert.equal(r.outcome, SEED_FAILED, what);
    }
    await assert.rejects(
      readArchiveTop(Readable.from([tarOf([cases[0]?.[1] as Member])]), IdShift.none),
      (err) => {
        assert.equal((err as SubstrateError).reason, SEED_FAILED);
        return true;
      },
    );
  });

  it("fails a truncated archive definitely and an input error as it is", async () => {
    const whole = tarOf([member({ name: "data/f", kind: "0", data: "z".repeat(2000) })]);
    assert.equal(
      (await vet(whole.subarray(0, 1500), { maxBytes: 1 << 20, maxEntries: 9 })).outcome,
      SEED_FAILED,
    );
    const broken = new Readable({
      read() {
        this.destroy(new Error("engine connection reset"));
      },
    });
    await assert.rejects(
      drain(vetArchive(broken, { maxBytes: 1, maxEntries: 1 }, IdShift.none).output),
      /connection reset/,
    );
  });

  it(`model archives: refused exactly as the model says, else listed by GNU tar as built (seed ${SEED})`, async (t) => {
    t.diagnostic(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} replays it)`);
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(memberArb.map(fitting), { maxLength: 8 }),
        limitsArb,
        async (members, limits) => {
          const want = expected(members, limits);
          const got = await vet(tarOf(members), limits);
          tally(seen, got.outcome);
          assert.equal(got.outcome, want);
          if (got.output === undefined) return;
          const listed = await gnuList(got.output);
          assert.deepEqual(
            listed.map((l) => l.name.replace(/\/$/, "")),
            members.map((m) => m.name.replace(/\/$/, "")),
          );
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    t.diagnostic(`outcomes: ${[...seen].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  });

  it(`corrupted archives: a definite refusal, or an archive that obeys every rule (seed ${SEED})`, async (t) => {
    t.diagnostic(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} replays it)`);
    const seen = new Map<string, number>();
    // Bytes anywhere (checksums then mostly fail), or header fields with the checksums
    // written again, so the parser sees well-sealed nonsense: sizes, types, names, magic.
    const corruption = fc.record({
      inHeaders: fc.boolean(),
      flips: fc.array(fc.tuple(fc.nat(), fc.nat(511), fc.nat(255)), { minLength: 1, maxLength: 6 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(memberArb.map(fitting), { minLength: 1, maxLength: 6 }),
        limitsArb,
        corruption,
        async (members, limits, { inHeaders, flips }) => {
          const { bytes: archive, headers } = tarLayout(members);
          for (const [at, offset, byte] of flips) {
            const where = inHeaders ? (headers[at % headers.length] as number) + offset : at % archive.length;
            archive[where] = byte;
          }
          if (inHeaders) for (const h of headers) seal(archive.subarray(h, h + 512));
          const got = await vet(archive, limits);
          tally(seen, got.outcome);
          if (got.output === undefined) {
            assert.ok([SEED_FAILED, SEED_TOO_LARGE].includes(got.outcome), got.outcome);
            return;
          }
          const listed = await gnuList(got.output);
          assert.ok(listed.length <= limits.maxEntries, "entry cap");
          const bytes = listed.filter((l) => l.type === "-").reduce((n, l) => n + l.size, 0);
          assert.ok(bytes <= limits.maxBytes, "byte cap");
          for (const l of listed) {
            assert.ok(!l.name.startsWith("/") && !l.name.split("/").includes(".."), l.name);
            assert.ok(!["c", "b"].includes(l.type), `device ${l.name}`);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    t.diagnostic(`outcomes: ${[...seen].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  });
});
