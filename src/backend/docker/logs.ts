/**
 * Container logs as the contract serves them: one text per `<service>/<index>`, at most
 * `tail` lines each, all of them together under one content budget (32 MiB, as the
 * reference) so a chatty lease cannot make a single read unbounded.
 */

export const LOG_CONTENT_BUDGET_BYTES = 32 * 1024 * 1024;
export const LOG_UNAVAILABLE = "<log unavailable>";
const TRUNCATED = "\n[fred: log truncated at the aggregate size limit]\n";

/**
 * Splits the engine's multiplexed log stream (8-byte frame headers: stream type, three
 * zero bytes, big-endian length) into text. Input that is not framed (a TTY container)
 * comes back as is.
 */
export function demuxLogStream(raw: Buffer): string {
  const chunks: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    if (!isFrameHeader(raw, offset))
      return offset === 0 ? raw.toString("utf8") : Buffer.concat(chunks).toString("utf8");
    const size = raw.readUInt32BE(offset + 4);
    chunks.push(raw.subarray(offset + 8, Math.min(raw.length, offset + 8 + size)));
    offset += 8 + size;
  }
  if (offset === 0 && raw.length > 0) return raw.toString("utf8");
  return Buffer.concat(chunks).toString("utf8");
}

/** Whether the 8 bytes at `offset` are a frame header: stream type 0-2, then three zero bytes. */
export function isFrameHeader(raw: Buffer, offset: number): boolean {
  const type = raw[offset];
  return (type === 0 || type === 1 || type === 2) && raw.readUIntBE(offset + 1, 3) === 0;
}

/** Keeps the last `tail` lines (a trailing newline does not count as an extra line). */
export function lastLines(text: string, tail: number): string {
  if (text === "") return text;
  const lines = text.split("\n");
  const trailing = lines[lines.length - 1] === "";
  if (trailing) lines.pop();
  const kept = lines.slice(-tail).join("\n");
  return trailing ? `${kept}\n` : kept;
}

/**
 * Applies the aggregate budget over entries in key order: once it is spent, the entry that
 * crossed it is cut (keeping its newest bytes) and later entries get only the marker.
 */
export function applyLogBudget(
  entries: ReadonlyArray<readonly [string, string]>,
  budgetBytes = LOG_CONTENT_BUDGET_BYTES,
): Record<string, string> {
  const out: Record<string, string> = {};
  let left = budgetBytes;
  for (const [key, text] of entries) {
    const size = Buffer.byteLength(text);
    if (size <= left) {
      out[key] = text;
      left -= size;
      continue;
    }
    const kept =
      left > 0
        ? Buffer.from(text)
            .subarray(size - left)
            .toString("utf8")
        : "";
    out[key] = `${TRUNCATED.trimStart()}${kept}`;
    left = 0;
  }
  return out;
}
