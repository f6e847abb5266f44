import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { launchScript, listenLoopback, pickFreePort, portOf, runFred, until } from "./index.ts";

const CHILD = new URL("./fixtures/child.ts", import.meta.url).pathname;
const PARENT = new URL("./fixtures/parent.ts", import.meta.url).pathname;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("test support: launcher", () => {
  it("reads the ready line and kills the whole group on dispose", async () => {
    let pids: { pid: number; grandchild: number };
    {
      await using child = await launchScript<{ pid: number; grandchild: number }>(CHILD, ["ready"]);
      pids = child.ready;
      assert.equal(child.pid, pids.pid);
      assert.ok(child.running());
      assert.ok(alive(pids.grandchild), "the grandchild runs while the handle lives");
      assert.match(child.stderr(), /child starting in mode ready/);
    }
    assert.equal(alive(pids.pid), false, "the child is gone after dispose");
    await until(() => !alive(pids.grandchild), "the grandchild to be gone", 5_000);
  });

  it("kills the launched groups when the test process itself is interrupted", async () => {
    const parent = await launchScript<{ pid: number; grandchild: number }>(PARENT);
    const { pid, grandchild } = parent.ready;
    parent.signal("SIGINT");
    assert.equal((await parent.waitExit(10_000)).signal, "SIGINT");
    await until(
      () => !alive(pid) && !alive(grandchild),
      "the interrupted parent's children to be gone",
      5_000,
    );
  });

  it("recognises a custom ready line on stderr", async () => {
    await using child = await launchScript(CHILD, ["stderr-ready"], {
      ready: (line, stream) => (stream === "stderr" ? /listening on (\d+)/.exec(line)?.[1] : undefined),
    });
    assert.equal(child.ready, "4242");
    // The streams are read independently: stdout's line may arrive after stderr's.
    await until(() => child.stdout() === "not json\n", "the stdout line to be collected", 5_000);
  });

  it("stop() escalates to SIGKILL when SIGTERM is ignored", async () => {
    const child = await launchScript(CHILD, ["stubborn"]);
    await until(() => child.stderr().includes("child starting"), "the child's first log line");
    const exit = await child.stop(300);
    assert.equal(exit.signal, "SIGKILL");
    assert.equal(child.running(), false);
  });

  it("fails with the log tail when the process exits before its ready line", async () => {
    await assert.rejects(launchScript(CHILD, ["crash"], { label: "crasher" }), (err: Error) => {
      assert.match(err.message, /crasher exited with 3 before it was ready/);
      assert.match(err.message, /child starting in mode crash/);
      return true;
    });
  });

  it("fails with the log tail past the ready deadline, and kills the process", async () => {
    await assert.rejects(
      launchScript(CHILD, ["silent"], { label: "mute", readyTimeoutMs: 1_500 }),
      (err: Error) => {
        assert.match(err.message, /mute not ready within 1500 ms/);
        assert.match(err.message, /child starting in mode silent/);
        return true;
      },
    );
  });

  it("waitExit() reports how the process ended, and times out with the log tail", async () => {
    const child = await launchScript(CHILD, ["ready"]);
    await assert.rejects(child.waitExit(100), /did not exit within 100 ms[\s\S]*child starting/);
    child.signal("SIGTERM");
    assert.deepEqual(await child.waitExit(10_000), { code: null, signal: "SIGTERM" });
    await child.stop();
  });

  it("runFred() runs a command to completion and keeps its exit code", async () => {
    const ok = await runFred(["--help"]);
    assert.equal(ok.code, 0);
    assert.match(ok.stdout, /Usage: fred/);
    const bad = await runFred(["no-such-command"]);
    assert.notEqual(bad.code, 0);
  });
});

describe("test support: until", () => {
  it("resolves to the first value that is not undefined, null or false", async () => {
    let n = 0;
    const value = await until(() => (++n >= 3 ? { n } : n === 1 ? null : false), "the third call");
    assert.deepEqual(value, { n: 3 });
  });

  it("names what it awaited and the last value seen when the deadline passes", async () => {
    await assert.rejects(
      until(() => undefined, "the answer", { timeoutMs: 60, context: () => "extra context" }),
      (err: Error) => {
        assert.match(err.message, /^timed out after \d+ ms waiting for the answer \(last value: undefined\)/);
        assert.match(err.message, /extra context/);
        return true;
      },
    );
    await assert.rejects(
      until(() => false, "a flag", 30),
      /waiting for a flag \(last value: false\)/,
    );
  });

  it("lets a probe's error fail the wait at once", async () => {
    const started = Date.now();
    await assert.rejects(
      until(() => {
        throw new Error("probe broke");
      }, "anything"),
      /probe broke/,
    );
    assert.ok(Date.now() - started < 5_000);
  });
});

describe("test support: ports", () => {
  it("listenLoopback binds port 0 and reads the port back; pickFreePort gives a bindable port", async () => {
    const server = createServer();
    const { port, url } = await listenLoopback(server);
    assert.ok(port > 0);
    assert.equal(portOf(url), port);
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const picked = await pickFreePort();
    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once("error", reject);
      again.listen(picked, "127.0.0.1", resolve);
    });
    await new Promise<void>((resolve) => again.close(() => resolve()));
  });

  it("Symbol.asyncDispose exists (no polyfill needed on Node ≥ 22.12)", () => {
    assert.equal(typeof Symbol.asyncDispose, "symbol");
  });
});
