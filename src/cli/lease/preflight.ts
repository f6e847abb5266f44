import { parseRegistry } from "../../backend/kit/index.ts";
import type { CosmosChain } from "../../chain/cosmos/adapter.ts";
import type { ChainLease } from "../../chain/port.ts";
import type { SKU } from "../../chain/proto/index.ts";
import { closestName } from "../../core/closest.ts";
import { FredError } from "../../core/errors.ts";
import type { LeaseItem } from "../../core/lease-items.ts";
import { matchManifestToItems } from "../../core/lease-items.ts";
import { leaseEnded } from "../../core/lease-rules.ts";
import { type Manifest, type Problem, parseManifest } from "../../core/manifest/index.ts";
import { isCanonicalUuid } from "../../core/uuid.ts";
import type { SkuSpec } from "../chain.ts";
import { problemLine } from "../manifest.ts";
import { ExitCode } from "../output.ts";
import { type LeaseFlags, progress, providerUrl, tenantApi } from "./context.ts";
import type { TenantApi } from "./tenant-api.ts";

/**
 * What a tenant command checks before it spends anything on chain: a lease that the
 * provider is bound to reject costs the tenant a transaction and, worse, a wait. So
 * `deploy`, `create --manifest`, `update` and `restore` check, in one pass that reports
 * every problem at once:
 *  - the manifest parses and passes the same rules the backend applies (JSON pointers);
 *  - every `--sku` names an active SKU ("did you mean", with the list), all of one provider;
 *  - the manifest's services and the items name each other (with the `--sku` to type);
 *  - the provider's API answers, is the SKUs' provider, serves each SKU, and allows each
 *    image's registry and the manifest's size (`GET /v1/provider`).
 * Only when all of that holds does the command send its transaction.
 */
export interface Checked {
  /** The specs with each SKU reference resolved to its UUID. */
  specs: SkuSpec[];
  providerUuid: string;
  api: TenantApi;
}

/** The parts of `GET /v1/provider` the checks read (everything else is ignored). */
interface ProviderPolicy {
  provider_uuid?: unknown;
  backends?: { name?: unknown; skus?: unknown; default?: unknown; allowed_registries?: unknown }[];
  limits?: { max_manifest_bytes?: unknown };
}

/** Thrown when a check found problems: each was printed on its own line already. */
function refuseWith(problems: readonly string[], spent: string): never {
  for (const problem of problems) progress(problem);
  progress(
    `refused (${problems.length === 1 ? "1 problem" : `${problems.length} problems`} above); ${spent}`,
  );
  throw new ExitCode(1);
}

const NOTHING_CREATED = "nothing was sent to the chain";

/** The manifest's problems, each as `<pointer>: <message>`, or the parsed manifest. */
function manifestProblems(bytes: Uint8Array): { manifest?: Manifest; problems: string[] } {
  const parsed = parseManifest(bytes);
  if (parsed.ok) return { manifest: parsed.manifest, problems: [] };
  return { problems: parsed.problems.map(problemText) };
}

/** Lease commands name the manifest and the `--sku` items a problem points into. */
const problemText = (problem: Problem) =>
  problemLine(problem, { manifest: "manifest ", items: "--sku item " });

/** Resolves every spec against the chain's active SKUs; unknown names get a suggestion. */
function resolveSpecs(
  specs: readonly SkuSpec[],
  active: readonly SKU[],
): { specs: SkuSpec[]; skus: SKU[]; problems: string[] } {
  const problems: string[] = [];
  const resolved: SkuSpec[] = [];
  const skus: SKU[] = [];
  const names = [...new Set(active.map((s) => s.name))].sort();
  for (const spec of specs) {
    const matches = isCanonicalUuid(spec.ref)
      ? active.filter((s) => s.uuid === spec.ref)
      : active.filter((s) => s.name === spec.ref);
    if (matches.length === 1) {
      const sku = matches[0] as SKU;
      skus.push(sku);
      resolved.push({ ...spec, ref: sku.uuid });
    } else if (matches.length > 1) {
      problems.push(`--sku ${spec.ref}: ${matches.length} active SKUs have that name; give its UUID`);
    } else {
      const guess = isCanonicalUuid(spec.ref) ? undefined : closestName(spec.ref, names);
      problems.push(
        `--sku ${spec.ref}: no active SKU ${isCanonicalUuid(spec.ref) ? "has that UUID" : "has that name"}${
          guess === undefined ? "" : `; did you mean ${guess}?`
        } (active: ${names.join(", ") || "none"})`,
      );
    }
  }
  const providers = new Set(skus.map((s) => s.providerUuid));
  if (providers.size > 1)
    problems.push(
      `the --sku items belong to ${providers.size} providers; one lease is served by one provider`,
    );
  return { specs: resolved, skus, problems };
}

/** Services and items must name each other; says which `--sku` form would fit. */
function fitProblems(manifest: Manifest, specs: readonly SkuSpec[], skus: readonly SKU[]): string[] {
  const items: LeaseItem[] = specs.map((s) => ({
    sku_uuid: s.ref,
    quantity: Number(s.quantity),
    ...(s.serviceName === "" ? {} : { service_name: s.serviceName }),
  }));
  const problems = matchManifestToItems(manifest, items).map(problemText);
  if (problems.length === 0) return [];
  const services = Object.keys(manifest.services);
  const first = skus[0]?.name ?? specs[0]?.ref ?? "<sku>";
  if (manifest.format === "stack" && specs.every((s) => s.serviceName === "")) {
    const named = services.map((service) => `--sku ${first}:1:${service}`).join(" ");
    problems.push(`a stack manifest needs one --sku item per service, named after it; try ${named}`);
  }
  return problems;
}

/** What the provider's published policy says about this lease: one line per problem. */
function policyProblems(
  policy: ProviderPolicy,
  providerUuid: string,
  skus: readonly SKU[],
  manifest: Manifest | undefined,
  bytes: number,
): string[] {
  const problems: string[] = [];
  if (typeof policy.provider_uuid === "string" && policy.provider_uuid !== providerUuid)
    problems.push(
      `the provider API answers as provider ${policy.provider_uuid}, but the SKUs belong to ${providerUuid}: check --provider-url`,
    );
  const max = policy.limits?.max_manifest_bytes;
  if (typeof max === "number" && bytes > max)
    problems.push(`the manifest is ${bytes} bytes; this provider accepts at most ${max}`);
  const backends = Array.isArray(policy.backends) ? policy.backends : [];
  // Routing as providerd does it, by the first item's SKU: the backends that list it, else
  // the default one (else the first configured). The lease's images must pass one of them.
  const first = skus[0]?.uuid;
  const listing = backends.filter((b) => Array.isArray(b.skus) && (b.skus as unknown[]).includes(first));
  const fallback = backends.find((b) => b.default === true) ?? backends[0];
  const serving = listing.length > 0 ? listing : fallback === undefined ? [] : [fallback];
  const lists = serving.map((b) => b.allowed_registries);
  // null (or a backend that publishes no list): any registry.
  const restricted = lists.length > 0 && lists.every(Array.isArray);
  for (const [service, spec] of Object.entries(restricted ? (manifest?.services ?? {}) : {})) {
    let registry: string;
    try {
      registry = parseRegistry(spec.image);
    } catch {
      continue; // the manifest check already reported it
    }
    if (!lists.some((l) => (l as unknown[]).includes(registry)))
      problems.push(
        `service ${service}: image registry ${registry} is not allowed by this provider (allowed: ${[
          ...new Set(lists.flat()),
        ].join(", ")})`,
      );
  }
  return problems;
}

/**
 * Every check before a lease is created for `specs` (and `manifest`, when the lease will
 * carry one). Prints each problem and exits 1 without sending anything when one fails.
 */
export async function checkBeforeCreate(
  c: CosmosChain,
  flags: LeaseFlags,
  specs: readonly SkuSpec[],
  manifestBytes: Uint8Array | undefined,
): Promise<Checked> {
  const problems: string[] = [];
  const named = specs.filter((s) => s.serviceName !== "").length;
  if (named !== 0 && named !== specs.length)
    problems.push("give a service name for every --sku item or for none");
  let manifest: Manifest | undefined;
  if (manifestBytes !== undefined) {
    const checked = manifestProblems(manifestBytes);
    manifest = checked.manifest;
    problems.push(...checked.problems);
  }
  const resolved = resolveSpecs(specs, await c.activeSkus());
  problems.push(...resolved.problems);
  if (manifest !== undefined && resolved.problems.length === 0)
    problems.push(...fitProblems(manifest, resolved.specs, resolved.skus));
  if (problems.length > 0) refuseWith(problems, NOTHING_CREATED);
  const providerUuid = (resolved.skus[0] as SKU).providerUuid;
  const url = await providerUrl(flags, c, providerUuid);
  const api = await tenantApi(flags, url);
  const policy = await readPolicy(api);
  problems.push(
    ...policyProblems(policy, providerUuid, resolved.skus, manifest, manifestBytes?.byteLength ?? 0),
  );
  if (problems.length > 0) refuseWith(problems, NOTHING_CREATED);
  return { specs: resolved.specs, providerUuid, api };
}

/** The checks an update makes before it sends the new manifest (nothing on chain). */
export async function checkUpdate(api: TenantApi, manifestBytes: Uint8Array): Promise<void> {
  const { manifest, problems } = manifestProblems(manifestBytes);
  if (manifest !== undefined) {
    const policy = await readPolicy(api);
    const max = policy.limits?.max_manifest_bytes;
    if (typeof max === "number" && manifestBytes.byteLength > max)
      problems.push(
        `the manifest is ${manifestBytes.byteLength} bytes; this provider accepts at most ${max}`,
      );
  }
  if (problems.length > 0) refuseWith(problems, "nothing was sent to the provider");
}

/**
 * A restore's source must be the caller's, ended (closed or expired: a rejected lease never
 * ran), and hold retained data, or the new lease would be created for nothing.
 */
export async function checkRestorable(api: TenantApi, source: ChainLease, tenant: string): Promise<void> {
  const state = source.state.replace("LEASE_STATE_", "").toLowerCase();
  const problems: string[] = [];
  if (source.tenant !== tenant) problems.push(`lease ${source.uuid} belongs to another tenant`);
  else if (source.state === "LEASE_STATE_REJECTED")
    problems.push(`lease ${source.uuid} was rejected: it never ran, so it has no data to restore`);
  else if (!leaseEnded(source.state))
    problems.push(
      `lease ${source.uuid} is ${state}: close it first (fred lease close ${source.uuid}), then restore`,
    );
  else {
    const { body } = await api.lease(source.uuid, "status");
    if (body.provision_status !== "retained")
      problems.push(
        `lease ${source.uuid} holds no retained data (provision status: ${String(body.provision_status ?? "none")}); its data was deleted or never kept`,
      );
  }
  if (problems.length > 0) refuseWith(problems, NOTHING_CREATED);
}

/** `GET /v1/provider`; a provider that does not answer stops the command before any tx. */
async function readPolicy(api: TenantApi): Promise<ProviderPolicy> {
  try {
    return (await api.provider()) as ProviderPolicy;
  } catch (err) {
    throw new FredError(
      "ERR_TENANT_API",
      `${(err as Error).message}; ${NOTHING_CREATED} (a lease its provider cannot be reached for would wait unserved)`,
      { cause: err },
    );
  }
}
