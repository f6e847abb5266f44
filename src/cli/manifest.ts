import { createReadStream } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { parseStrictJson } from "../core/encoding.ts";
import { matchManifestToItems, parseLeaseItems } from "../core/lease-items.ts";
import { MANIFEST_LIMITS, type Problem, parseManifest } from "../core/manifest/index.ts";
import { ExitCode, printJson, say } from "./output.ts";

interface ValidateOptions {
  items?: string;
  json?: boolean;
  maxBytes: number;
}

/** Upper bound for --items text; a lease has at most 100 small items. */
const MAX_ITEMS_BYTES = 64 * 1024;

function byteCount(value: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(value)) throw new InvalidArgumentError("expected a positive number of bytes");
  return Number(value);
}

/**
 * Reads at most `limit + 1` bytes, so an oversized input is recognised (and refused by
 * the parser) without ever being held in memory whole. "-" reads standard input.
 */
async function readBounded(file: string, limit: number): Promise<Buffer> {
  const stream = file === "-" ? process.stdin : createReadStream(file, { end: limit });
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    total += (chunk as Buffer).length;
    if (total > limit) break;
  }
  if (file === "-") process.stdin.pause();
  return Buffer.concat(chunks).subarray(0, limit + 1);
}

function itemsProblems(text: string): { items?: ReturnType<typeof parseLeaseItems>; problems: Problem[] } {
  let decoded: unknown;
  try {
    decoded = parseStrictJson(text, MAX_ITEMS_BYTES);
  } catch (err) {
    return {
      problems: [
        { path: "", document: "items", message: `--items is not usable JSON: ${(err as Error).message}` },
      ],
    };
  }
  const items = parseLeaseItems(decoded);
  return { items, problems: items.ok ? [] : items.problems };
}

/**
 * One problem as a person reads it: `<prefix><pointer>: <message>`, the pointer "(root)" for
 * the whole document, and the prefix saying which document it points into.
 */
export function problemLine(problem: Problem, prefix: { manifest: string; items: string }): string {
  const where = problem.path === "" ? "(root)" : problem.path;
  return `${problem.document === "items" ? prefix.items : prefix.manifest}${where}: ${problem.message}`;
}

const humanLine = (problem: Problem) => problemLine(problem, { manifest: "", items: "--items " });

async function validate(file: string, opts: ValidateOptions): Promise<void> {
  const problems: Problem[] = [];
  let services: string[] = [];
  let format = "";

  let bytes: Buffer | undefined;
  try {
    bytes = await readBounded(file, opts.maxBytes);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    problems.push({ path: "", message: `cannot read manifest file ${JSON.stringify(file)} (${reason})` });
  }
  if (bytes !== undefined) {
    const parsed = parseManifest(bytes, { maxBytes: opts.maxBytes });
    const items = opts.items === undefined ? undefined : itemsProblems(opts.items);
    if (items !== undefined) problems.push(...items.problems);
    if (parsed.ok) {
      services = Object.keys(parsed.manifest.services);
      format = parsed.manifest.format;
      if (items?.items?.ok) problems.push(...matchManifestToItems(parsed.manifest, items.items.items));
    } else {
      problems.unshift(...parsed.problems);
    }
  }

  if (problems.length === 0) {
    if (!opts.json) {
      say(`valid ${format} manifest; services: ${services.join(", ")}`);
      if (format === "flat")
        say('note: the flat form is deprecated; write {"services": {"app": {…}}} instead');
    }
    printJson({ valid: true, services });
    return;
  }
  if (!opts.json) for (const problem of problems) say(humanLine(problem));
  printJson({ valid: false, problems });
  throw new ExitCode(1);
}

export function registerManifestCommands(program: Command): void {
  const manifest = program.command("manifest").description("Check tenant manifests before uploading them");

  manifest
    .command("validate")
    .description("Validate a manifest (and optionally its fit to the lease items); exit 0 if valid, 1 if not")
    .argument("<file>", 'manifest JSON file, or "-" for standard input')
    .option("--items <json>", 'lease items as on chain: [{"sku_uuid":…,"quantity":…,"service_name"?:…}]')
    .option("--json", "print only the JSON result line (nothing on stderr)")
    .option("--max-bytes <n>", "refuse manifests larger than this", byteCount, MANIFEST_LIMITS.maxBytes)
    .addHelpText(
      "after",
      `
Output: one JSON line on stdout, {"valid":true,"services":[…]} or
{"valid":false,"problems":[{"path":"<JSON pointer>","message":"…"}]}. Without --json every
problem is also written to stderr as "<pointer>: <message>". Problems with --items carry
"document":"items" and point into the items array.

Examples:
  $ fred manifest validate manifest.json
  $ fred manifest validate stack.json --items '[{"sku_uuid":"0190f3a2-7c1e-7000-8000-0000000000aa","quantity":1,"service_name":"web"},{"sku_uuid":"0190f3a2-7c1e-7000-8000-0000000000bb","quantity":1,"service_name":"db"}]'
  $ cat manifest.json | fred manifest validate - --json | jq .valid`,
    )
    .action((file: string, opts: ValidateOptions) => validate(file, opts));
}
