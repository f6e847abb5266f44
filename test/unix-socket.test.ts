import assert from "node:assert/strict";
import { linkSync, lstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { parseUnixAddress } from "../src/core/unix-address.ts";
import { listenUnixSocket } from "../src/unix-socket.ts";

/**
 * The one Unix socket listener (src/unix-socket.ts) on real sockets: the file's mode from
 * the bind, a stale file replaced, a live listener or a non-socket refused, the file gone
 * after close. And the `unix:/path` spelling (src/core/unix-address.ts).
 */
const dir = mkdtempSync(join(tmpdir(), "fred-unix-socket-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const refuse = (message: string) => new Error(`refused: ${message}`);
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe("listenUnixSocket", () => {
  it("creates the socket with the asked mode, whatever the umask, and removes it on close", async () => {
    for (const mode of [0o660, 0o600] as const) {
      const path = join(dir, `mode-${mode.toString(8)}.sock`);
      const umask = process.umask(0);
      const server = createServer();
      let inForce: number;
      try {
        await listenUnixSocket(server, path, { mode, refuse });
      } finally {
        // umask(x) sets x and answers the mask in force before: what the listener left.
        inForce = process.umask(umask);
      }
      try {
        assert.equal(inForce, 0, "the umask the listener found is restored");
        const stat = lstatSync(path);
        assert.ok(stat.isSocket());
        assert.equal((stat.mode & 0o777).toString(8), mode.toString(8));
      } finally {
        await close(server);
      }
      assert.throws(() => lstatSync(path), /ENOENT/);
    }
  });

  it("replaces a stale socket file (nobody listens on it)", async () => {
    const path = join(dir, "stale.sock");
    // A second name for a listening socket outlives the listener: a stale socket file.
    const first = createServer();
    await listenUnixSocket(first, join(dir, "first.sock"), { mode: 0o600, refuse });
    linkSync(join(dir, "first.sock"), path);
    await close(first);
    assert.ok(lstatSync(path).isSocket());

    const server = createServer((c) => c.end("hello"));
    await listenUnixSocket(server, path, { mode: 0o660, refuse });
    try {
      assert.equal((lstatSync(path).mode & 0o777).toString(8), "660");
    } finally {
      await close(server);
    }
  });

  it("refuses a path another process listens on, and leaves that socket alone", async () => {
    const path = join(dir, "live.sock");
    const live = createServer((c) => c.end());
    await listenUnixSocket(live, path, { mode: 0o600, refuse });
    try {
      await assert.rejects(
        listenUnixSocket(createServer(), path, { mode: 0o600, refuse }),
        /refused: another process is listening on .*live\.sock; stop it or choose another path/,
      );
      assert.ok(lstatSync(path).isSocket(), "the live socket is still there");
    } finally {
      await close(live);
    }
  });

  it("never removes a file that is not a socket, and names a missing directory", async () => {
    const path = join(dir, "plain-file");
    writeFileSync(path, "keep me");
    await assert.rejects(
      listenUnixSocket(createServer(), path, { mode: 0o600, refuse }),
      /refused: .*plain-file exists and is not a socket; refusing to replace it/,
    );
    assert.ok(lstatSync(path).isFile());
    await assert.rejects(
      listenUnixSocket(createServer(), join(dir, "no-such-dir", "b.sock"), { mode: 0o600, refuse }),
      /refused: cannot listen on .*no-such-dir\/b\.sock: .*no-such-dir does not exist/,
    );
  });
});

describe("unix:/path addresses", () => {
  it("takes unix: and an absolute, normalized path of at most 107 bytes", () => {
    assert.deepEqual(parseUnixAddress("unix:/run/fred/docker-backend.sock"), {
      ok: true,
      path: "/run/fred/docker-backend.sock",
    });
    assert.equal(parseUnixAddress(`unix:/${"a".repeat(106)}`).ok, true);
    const problems: [string, RegExp][] = [
      ["unix:run/b.sock", /absolute socket path .* not a relative one/],
      ["unix:", /absolute socket path/],
      ["unix:///run/b.sock", /not a unix:\/\/ URL/],
      ["unix:/run/./b.sock", /must be normalized/],
      ["unix:/run/b.sock/", /must be normalized/],
      ["unix:/run\nb.sock", /control characters/],
      [`unix:/${"a".repeat(107)}`, /at most 107 bytes/],
      ["http:/x", /must be unix: followed by an absolute path/],
    ];
    for (const [text, problem] of problems) {
      const r = parseUnixAddress(text);
      assert.ok(!r.ok && problem.test(r.problem), `${JSON.stringify(text)}: ${JSON.stringify(r)}`);
    }
  });
});
