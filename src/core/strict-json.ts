import { FredError } from "./errors.ts";

/**
 * JSON.parse with two extra refusals: inputs larger than `maxBytes` (checked before
 * parsing) and objects with a repeated key. Go keeps the last duplicate silently; we
 * refuse it, because two readers of one document must never see different values.
 */
export function parseStrictJson(input: string | Uint8Array, maxBytes: number): unknown {
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size > maxBytes) throw new FredError("ERR_JSON_TOO_LARGE", `document exceeds ${maxBytes} bytes`);
  const text = typeof input === "string" ? input : Buffer.from(input).toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FredError("ERR_JSON", `invalid JSON: ${(err as Error).message}`);
  }
  const dup = findDuplicateKey(text);
  if (dup !== undefined)
    throw new FredError("ERR_JSON_DUPLICATE_KEY", `duplicate key ${JSON.stringify(dup)}`);
  return value;
}

/**
 * Scans text already known to be valid JSON and returns the first key that repeats
 * within one object. Only objects keep a key set; strings are skipped wholesale.
 */
function findDuplicateKey(text: string): string | undefined {
  if (!text.includes("{")) return undefined;
  // One entry per open container: a Set for objects, null for arrays.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i + 1;
      let hasEscape = false;
      i++;
      while (text.charCodeAt(i) !== 0x22) {
        if (text.charCodeAt(i) === 0x5c /* \ */) {
          hasEscape = true;
          i++;
        }
        i++;
      }
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        const raw = text.slice(start, i);
        const key = hasEscape ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (top.has(key)) return key;
        top.add(key);
        expectKey = false;
      }
    } else if (ch === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === 0x5b /* [ */) {
      stack.push(null);
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
    } else if (ch === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] != null;
    }
  }
  return undefined;
}
