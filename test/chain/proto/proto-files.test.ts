import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as billingQuery from "../../../src/chain/proto/billing-query.ts";
import * as billingTx from "../../../src/chain/proto/billing-tx.ts";
import * as billingTypes from "../../../src/chain/proto/billing-types.ts";
import type { MessageCodec } from "../../../src/chain/proto/codec.ts";
import * as sku from "../../../src/chain/proto/sku.ts";

const ROOT = "src/chain/proto/liftedinit";
const snake = (c: string) => c.replace(/[A-Z]/g, (x) => `_${x.toLowerCase()}`);

/** message name → "field_name=number" set, read from every .proto file of a package. */
function readProtoFields(pkg: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const file of readdirSync(join(ROOT, pkg, "v1"))) {
    const text = readFileSync(join(ROOT, pkg, "v1", file), "utf8");
    for (const m of text.matchAll(/^message (\w+) \{\n([\s\S]*?)^\}/gm)) {
      const fields = new Set<string>();
      for (const line of m[2]!.matchAll(/^\s+(?:repeated )?[\w.]+ (\w+) = (\d+);/gm))
        fields.add(`${line[1]}=${line[2]}`);
      out.set(m[1]!, fields);
    }
  }
  return out;
}

function codecsOf(mod: Record<string, unknown>): MessageCodec<unknown>[] {
  return Object.values(mod).filter(
    (v): v is MessageCodec<unknown> => typeof v === "object" && v !== null && "typeUrl" in v && "fields" in v,
  );
}

for (const [pkg, mods] of [
  ["billing", [billingTypes, billingTx, billingQuery]],
  ["sku", [sku]],
] as const) {
  describe(`liftedinit.${pkg}.v1 .proto files`, () => {
    const proto = readProtoFields(pkg);
    const codecs = mods.flatMap((m) => codecsOf(m as Record<string, unknown>));
    it("declare every message the TypeScript codecs know, with the same names and numbers", () => {
      assert.equal(proto.size, codecs.length);
      for (const codec of codecs) {
        const name = codec.typeUrl.split(".").pop()!;
        const fields = new Set(Object.entries(codec.fields).map(([n, s]) => `${snake(n)}=${s.no}`));
        assert.deepEqual(proto.get(name), fields, name);
      }
    });
  });
}

describe("newer-line wire changes", () => {
  const proto = readProtoFields("billing");
  it("carry the cursor fields and reserve the removed ones", () => {
    assert.ok(proto.get("MsgWithdraw")!.has("key=5"));
    assert.ok(proto.get("MsgWithdrawResponse")!.has("next_key=5"));
    assert.ok(proto.get("MsgWithdrawResponse")!.has("failed_lease_uuids=6"));
    assert.ok(!proto.get("QueryProviderWithdrawableRequest")!.has("limit=2"));
    assert.ok(proto.get("Lease")!.has("reservation=16"));
    assert.ok(proto.get("CreditAccount")!.has("unattributed_lease_count=7"));
  });
});
