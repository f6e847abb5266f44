/**
 * A tiny schema-driven protobuf codec in the shape cosmjs expects from ts-proto 2 output
 * (`encode(msg, writer?)`, `decode(bytes | reader, length?)`, `fromPartial`, `typeUrl`), built on
 * @bufbuild/protobuf's wire reader/writer. Each message is declared once as a field table
 * (number + kind), and its TypeScript type is inferred from that table, so field numbers live in
 * exactly one place. Proto3 rules: default scalars are not written, unknown fields are skipped.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

type ScalarKind = "string" | "bytes" | "bool" | "uint64" | "uint32" | "enum";

interface ScalarValue {
  string: string;
  bytes: Uint8Array;
  bool: boolean;
  uint64: bigint;
  uint32: number;
  enum: number;
}

/** One field of a message table; `T` is the TypeScript type of the field's value. */
export interface FieldSpec<T> {
  readonly no: number;
  readonly kind: ScalarKind | "message";
  readonly repeated: boolean;
  readonly codec?: MessageCodec<unknown>;
  /**
   * A sub-message declared `(gogoproto.nullable) = false` on the chain: the binary form is
   * unchanged, but amino JSON always carries it (an empty one when unset).
   */
  readonly required?: boolean;
  /** Phantom marker so `Infer` can read the value type. */
  readonly _type?: T;
}

// biome-ignore lint/suspicious/noExplicitAny: field tables mix value types.
export type Fields = Record<string, FieldSpec<any>>;
export type Infer<F extends Fields> = { [K in keyof F]: F[K] extends FieldSpec<infer V> ? V : never };
export type DeepPartial<T> = T extends bigint | Uint8Array | string | number | boolean
  ? T
  : T extends readonly (infer E)[]
    ? DeepPartial<E>[]
    : T extends object
      ? { [K in keyof T]?: DeepPartial<T[K]> | undefined }
      : T;

export interface MessageCodec<T> {
  readonly typeUrl: string;
  readonly fields: Fields;
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  decode(input: Uint8Array | BinaryReader, length?: number): T;
  fromPartial(object: DeepPartial<T>): T;
}

function scalar<K extends ScalarKind>(kind: K) {
  return (no: number): FieldSpec<ScalarValue[K]> => ({ no, kind, repeated: false });
}

/** Field constructors used by the message tables. */
export const f = {
  string: scalar("string"),
  bytes: scalar("bytes"),
  bool: scalar("bool"),
  uint64: scalar("uint64"),
  uint32: scalar("uint32"),
  enum: scalar("enum"),
  repeatedString: (no: number): FieldSpec<string[]> => ({ no, kind: "string", repeated: true }),
  /**
   * A singular sub-message; absent (undefined) when not set, as in cosmjs-types. `required`
   * marks a non-nullable field (see FieldSpec.required).
   */
  message: <M>(
    no: number,
    codec: MessageCodec<M>,
    opts: { required?: true } = {},
  ): FieldSpec<M | undefined> => ({
    no,
    kind: "message",
    repeated: false,
    codec: codec as MessageCodec<unknown>,
    ...(opts.required ? { required: true } : {}),
  }),
  repeatedMessage: <M>(no: number, codec: MessageCodec<M>): FieldSpec<M[]> => ({
    no,
    kind: "message",
    repeated: true,
    codec: codec as MessageCodec<unknown>,
  }),
};

/** The default of every unset bytes field: empty, so one shared instance serves them all. */
const NO_BYTES = new Uint8Array(0);

function defaultOf(spec: FieldSpec<unknown>): unknown {
  if (spec.repeated) return [];
  switch (spec.kind) {
    case "string":
      return "";
    case "bytes":
      return NO_BYTES;
    case "bool":
      return false;
    case "uint64":
      return 0n;
    case "uint32":
    case "enum":
      return 0;
    case "message":
      return undefined;
  }
}

function isDefault(spec: FieldSpec<unknown>, value: unknown): boolean {
  switch (spec.kind) {
    case "string":
      return value === "";
    case "bytes":
      return (value as Uint8Array).length === 0;
    case "bool":
      return value === false;
    case "uint64":
      return value === 0n;
    case "uint32":
    case "enum":
      return value === 0;
    case "message":
      return value === undefined || value === null;
  }
}

function writeOne(writer: BinaryWriter, spec: FieldSpec<unknown>, value: unknown): void {
  switch (spec.kind) {
    case "string":
      writer.tag(spec.no, WireType.LengthDelimited).string(value as string);
      return;
    case "bytes":
      writer.tag(spec.no, WireType.LengthDelimited).bytes(value as Uint8Array);
      return;
    case "bool":
      writer.tag(spec.no, WireType.Varint).bool(value as boolean);
      return;
    case "uint64":
      writer.tag(spec.no, WireType.Varint).uint64(value as bigint);
      return;
    case "uint32":
      writer.tag(spec.no, WireType.Varint).uint32(value as number);
      return;
    case "enum":
      writer.tag(spec.no, WireType.Varint).int32(value as number);
      return;
    case "message":
      writer.tag(spec.no, WireType.LengthDelimited).fork();
      spec.codec!.encode(value, writer);
      writer.join();
      return;
  }
}

function readOne(reader: BinaryReader, spec: FieldSpec<unknown>): unknown {
  switch (spec.kind) {
    case "string":
      return reader.string();
    case "bytes":
      return reader.bytes();
    case "bool":
      return reader.bool();
    case "uint64":
      return BigInt(reader.uint64());
    case "uint32":
      return reader.uint32();
    case "enum":
      return reader.int32();
    case "message":
      return spec.codec!.decode(reader, reader.uint32());
  }
}

function partialOne(spec: FieldSpec<unknown>, value: unknown): unknown {
  if (spec.kind === "message") return spec.codec!.fromPartial(value as never);
  if (spec.kind === "uint64") return BigInt(value as bigint);
  if (spec.kind === "bytes") return Uint8Array.from(value as Uint8Array);
  return value;
}

/** The wire type each kind is written with (no table has a packed repeated scalar). */
const WIRE_TYPE: Record<FieldSpec<unknown>["kind"], WireType> = {
  string: WireType.LengthDelimited,
  bytes: WireType.LengthDelimited,
  message: WireType.LengthDelimited,
  bool: WireType.Varint,
  uint64: WireType.Varint,
  uint32: WireType.Varint,
  enum: WireType.Varint,
};

/** Declares a message: `typeUrl` is `/` + the full proto name. */
export function message<F extends Fields>(typeUrl: string, fields: F): MessageCodec<Infer<F>> {
  const entries = Object.entries(fields) as [string, FieldSpec<unknown>][];
  // Decoding looks fields up by number in an array (field numbers of these tables are small).
  const byNumber: (readonly [string, FieldSpec<unknown>] | undefined)[] = [];
  for (const [name, spec] of entries) byNumber[spec.no] = [name, spec];
  // New messages are copies of one template of defaults (V8 clones a spread object by its
  // shape at once; adding the fields one by one cost a third of a lease list's decode), with
  // fresh arrays for the repeated fields.
  const template: Record<string, unknown> = {};
  for (const [name, spec] of entries) template[name] = defaultOf(spec);
  const repeated = entries.filter(([, spec]) => spec.repeated).map(([name]) => name);
  const create = (): Record<string, unknown> => {
    const out = { ...template };
    for (const name of repeated) out[name] = [];
    return out;
  };
  return {
    typeUrl,
    fields,
    encode(msg, writer = new BinaryWriter()) {
      const record = msg as Record<string, unknown>;
      for (const [name, spec] of entries) {
        const value = record[name];
        if (spec.repeated) {
          for (const item of (value as unknown[] | undefined) ?? []) writeOne(writer, spec, item);
        } else if (value !== undefined && !isDefault(spec, value)) {
          writeOne(writer, spec, value);
        }
      }
      return writer;
    },
    decode(input, length) {
      const reader = input instanceof BinaryReader ? input : new BinaryReader(input);
      const end = length === undefined ? reader.len : reader.pos + length;
      const out = create();
      while (reader.pos < end) {
        // reader.tag() returns a fresh [no, wireType] array per field: read the varint here.
        const start = reader.pos;
        const tag = reader.uint32();
        const no = tag >>> 3;
        const wireType = tag & 7;
        if (reader.pos - start > 5 || no === 0 || wireType > 5)
          throw new Error(`illegal tag: field no ${no} wire type ${wireType}`);
        const hit = byNumber[no];
        if (hit === undefined) {
          reader.skip(wireType, no);
          continue;
        }
        const [name, spec] = hit;
        // A declared field in another wire type is not this message (a varint read as a
        // sub-message's length would decode whatever follows as that sub-message).
        if (wireType !== WIRE_TYPE[spec.kind])
          throw new Error(`${typeUrl}: field ${name} (${no}) has wire type ${wireType}`);
        if (spec.repeated) (out[name] as unknown[]).push(readOne(reader, spec));
        else out[name] = readOne(reader, spec);
      }
      return out as Infer<F>;
    },
    fromPartial(object) {
      const out = create();
      const source = (object ?? {}) as Record<string, unknown>;
      for (const [name, spec] of entries) {
        const value = source[name];
        if (value === undefined || value === null) continue;
        out[name] = spec.repeated
          ? (value as unknown[]).map((item) => partialOne(spec, item))
          : partialOne(spec, value);
      }
      return out as Infer<F>;
    },
  };
}

/** Encodes a message to bytes (shorthand for `codec.encode(msg).finish()`). */
export function toBytes<T>(codec: MessageCodec<T>, value: T): Uint8Array {
  return codec.encode(value).finish();
}

/**
 * Encodes `value` with its repeated message field `field` given as messages already in their
 * binary form (a store's values), written unchanged: the same bytes as decoding each and
 * encoding the whole, without the round trip. `value[field]` is ignored.
 */
export function toBytesWithEncoded<T, K extends keyof T & string>(
  codec: MessageCodec<T>,
  value: Omit<T, K>,
  field: K,
  encoded: readonly Uint8Array[],
): Uint8Array {
  const spec = codec.fields[field];
  // Only the table's first field: encode() writes fields in table order, so the bytes match.
  if (spec?.kind !== "message" || !spec.repeated || Object.keys(codec.fields)[0] !== field)
    throw new Error(`${codec.typeUrl}: ${field} is not the leading repeated message field`);
  const writer = new BinaryWriter();
  for (const bytes of encoded) writer.tag(spec.no, WireType.LengthDelimited).bytes(bytes);
  return codec.encode({ ...value, [field]: [] } as T, writer).finish();
}
