/**
 * Fills a request message from URL path and query parameters the way grpc-gateway does: a
 * parameter names a field by its proto name, dotted into sub-messages
 * (`pagination.limit=10`); the text is parsed by the field's type (64-bit integers, booleans
 * as Go's strconv.ParseBool, bytes as base64, enums by name or number); parameters naming no
 * field are ignored; an unparsable value is InvalidArgument.
 *
 * A field's type is read off the codec's own defaults (`fromPartial` of a skeleton), so the
 * same code serves cosmjs-types and our field-table codecs.
 */

import { enumTable } from "./enums.ts";
import { RestError } from "./errors.ts";
import type { AnyCodec } from "./proto-json.ts";
import { camelCase } from "./proto-json.ts";

type Obj = Record<string, unknown>;

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

function typeUrlOf(codec: AnyCodec): string {
  return (codec as { typeUrl?: string }).typeUrl ?? "";
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function invalid(message: string): RestError {
  return new RestError("InvalidArgument", message);
}

function parseInteger(text: string, signed: boolean): string {
  if (!(signed ? /^-?\d+$/ : /^\d+$/).test(text))
    throw invalid(`strconv.Parse${signed ? "Int" : "Uint"}: parsing ${JSON.stringify(text)}: invalid syntax`);
  return text;
}

function parseBytes(text: string): Uint8Array {
  // The gateway takes standard base64 and falls back to the URL-safe alphabet.
  const std = text.replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(std) || std.replace(/=+$/, "").length % 4 === 1)
    throw invalid(`illegal base64 data in ${JSON.stringify(text)}`);
  return Uint8Array.from(Buffer.from(std, "base64"));
}

/** One leaf value, typed like the field's default `template`. */
function parseLeaf(
  template: unknown,
  values: string[],
  typeUrl: string,
  field: string,
  path: string,
): unknown {
  if (Array.isArray(template)) return values;
  if (values.length > 1)
    throw invalid(`too many values for field ${JSON.stringify(path)}: ${values.join(", ")}`);
  const text = values[0] ?? "";
  if (typeof template === "string") return text;
  if (typeof template === "bigint") return BigInt(parseInteger(text, true));
  if (typeof template === "boolean") {
    if (TRUE.has(text)) return true;
    if (FALSE.has(text)) return false;
    throw invalid(`strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`);
  }
  if (template instanceof Uint8Array) return parseBytes(text);
  if (typeof template === "number") {
    const names = enumTable(typeUrl, field);
    if (names !== undefined && Object.hasOwn(names, text)) return names[text];
    if (names !== undefined && !/^-?\d+$/.test(text))
      throw invalid(`${JSON.stringify(text)} is not a valid value for ${path}`);
    return Number(parseInteger(text, true));
  }
  return undefined;
}

/**
 * The default of the field at `segments` (proto names already in lowerCamel), growing
 * `skeleton` with an empty object for every unset sub-message on the way so the codec fills
 * in that sub-message's defaults; undefined when the path names no field.
 */
function fieldTemplate(
  codec: AnyCodec,
  skeleton: Obj,
  segments: string[],
): { template: unknown } | undefined {
  for (;;) {
    let shape: unknown = codec.fromPartial(skeleton);
    let sk = skeleton;
    let grew = false;
    for (const seg of segments.slice(0, -1)) {
      if (!isObj(shape) || !Object.hasOwn(shape, seg)) return undefined;
      if (shape[seg] === undefined) {
        sk[seg] = {};
        grew = true;
        break;
      }
      if (!isObj(shape[seg])) return undefined;
      if (!isObj(sk[seg])) sk[seg] = {};
      sk = sk[seg] as Obj;
      shape = shape[seg];
    }
    if (grew) continue;
    const leaf = segments[segments.length - 1]!;
    if (!isObj(shape) || !Object.hasOwn(shape, leaf)) return undefined;
    return { template: shape[leaf] };
  }
}

/**
 * The request message of `codec` with `params` (proto field path → its values; path
 * parameters first: as in the gateway, a query parameter cannot override a path parameter).
 */
export function buildRequest(codec: AnyCodec, params: ReadonlyArray<readonly [string, string[]]>): unknown {
  const typeUrl = typeUrlOf(codec);
  const skeleton: Obj = {};
  const values: Obj = {};
  const taken = new Set<string>();
  for (const [path, raw] of params) {
    if (taken.has(path)) continue;
    const segments = path.split(".").map(camelCase);
    const field = fieldTemplate(codec, skeleton, segments);
    // Sub-messages themselves cannot be given as text; the gateway ignores unknown names.
    if (field === undefined || field.template === undefined || isObj(field.template)) continue;
    const value = parseLeaf(field.template, raw, typeUrl, segments.join("."), path);
    if (value === undefined) continue;
    taken.add(path);
    let target = values;
    for (const seg of segments.slice(0, -1)) {
      if (!isObj(target[seg])) target[seg] = {};
      target = target[seg] as Obj;
    }
    target[segments[segments.length - 1]!] = value;
  }
  return codec.fromPartial(values);
}
