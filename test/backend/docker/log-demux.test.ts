import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LogDemuxer, sinceAfter } from "../../../src/backend/docker/log-follow.ts";

function frame(type: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe("the engine's log stream, decoded as it arrives", () => {
  it("splits frames cut anywhere into whole lines per stream", () => {
    const got: string[] = [];
    const demux = new LogDemuxer((stream, text) => got.push(`${stream}:${text}`));
    const bytes = Buffer.concat([
      frame(1, "2026-01-01T00:00:00.000000001Z out one\n2026-01-01T00:00:01Z out "),
      frame(2, "2026-01-01T00:00:02Z err\r\n"),
      frame(1, "two\n"),
    ]);
    // One byte at a time: headers and lines split across chunks.
    for (let i = 0; i < bytes.length; i++) demux.write(bytes.subarray(i, i + 1));
    assert.deepEqual(got, [
      "stdout:2026-01-01T00:00:00.000000001Z out one",
      "stderr:2026-01-01T00:00:02Z err",
      "stdout:2026-01-01T00:00:01Z out two",
    ]);
  });

  it("a TTY container's unframed output is all stdout", () => {
    const got: string[] = [];
    const demux = new LogDemuxer((stream, text) => got.push(`${stream}:${text}`));
    demux.write(Buffer.from("2026-01-01T00:00:00Z hello from a tty\n2026-01-01T00:00:01Z "));
    demux.write(Buffer.from("again\n"));
    assert.deepEqual(got, [
      "stdout:2026-01-01T00:00:00Z hello from a tty",
      "stdout:2026-01-01T00:00:01Z again",
    ]);
  });
});

describe("sinceAfter: resuming a container's log stream just after its last line read", () => {
  it("is the engine's seconds.nanoseconds one nanosecond later", () => {
    assert.equal(sinceAfter("2026-01-01T00:00:00.123456789Z"), "1767225600.123456790");
    assert.equal(sinceAfter("2026-01-01T00:00:00.999999999Z"), "1767225601.000000000");
    assert.equal(sinceAfter("2026-01-01T00:00:00.5Z"), "1767225600.500000001");
    assert.equal(sinceAfter("2026-01-01T00:00:00Z"), "1767225600.000000001");
  });
  it("is undefined for a timestamp that is not the engine's", () => {
    assert.equal(sinceAfter("yesterday"), undefined);
    assert.equal(sinceAfter("2026-01-01 00:00:00Z"), undefined);
  });
});
