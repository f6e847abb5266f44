import { createHash } from "node:crypto";
import { isIPv4, isIPv6 } from "node:net";

/**
 * The egress policy as nftables text, computed from the operator's allow/deny entries and
 * the bridges of this deployment's tenant networks. Pure: egress-firewall.ts loads the text
 * with `nft -f -`, and the table tests in test/backend/docker/egress-rules.test.ts read it.
 *
 * One table of our own per deployment (`inet fred_egress_<16 hex>`), so Docker's iptables
 * rules, a dockerd restart and another deployment on the same host never touch it. Its base
 * chains run before Docker's filter chains (priority filter - 10); a reject there is final,
 * while an accept only lets the packet go on to Docker's own chains.
 */

/** One operator entry: a destination network, optionally narrowed to a port and protocol. */
export interface EgressEntry {
  /** Canonical CIDR text (network address, prefix length). */
  readonly cidr: string;
  readonly family: "ipv4" | "ipv6";
  readonly port?: number;
  readonly protocol?: "tcp" | "udp";
}

export interface EgressPolicy {
  readonly allow: readonly EgressEntry[];
  readonly deny: readonly EgressEntry[];
}

/** The inside of a provider: never reachable from a tenant network unless an allow entry says so. */
export const DENIED_IPV4 = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
] as const;
export const DENIED_IPV6 = ["fc00::/7", "fe80::/10"] as const;

/** Every drop is a reject, so a tenant's connect fails at once instead of hanging. */
const REJECT = "reject with icmpx type admin-prohibited";

/** The table of one deployment: named from its storage id, so two on one host stay apart. */
export function egressTableName(storageId: string): string {
  return `fred_egress_${createHash("sha256").update(storageId).digest("hex").slice(0, 16)}`;
}

/**
 * "a.b.c.d/len", "v6/len" or a bare address → the canonical entry CIDR, or a problem
 * sentence. Host bits set after the prefix are refused: "10.1.2.3/8" is more likely a typo
 * than a wish for all of 10/8.
 */
export function parseCidr(text: string): { cidr: string; family: "ipv4" | "ipv6" } | { problem: string } {
  const [address = "", length, extra] = text.trim().split("/");
  if (extra !== undefined) return { problem: `${JSON.stringify(text)} is not an address or CIDR` };
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined;
  if (family === undefined)
    return { problem: `${JSON.stringify(text)} is not an IPv4 or IPv6 address or CIDR` };
  const bits = family === "ipv4" ? 32 : 128;
  const prefix = length === undefined ? bits : /^\d{1,3}$/.test(length) ? Number(length) : Number.NaN;
  if (!(prefix >= 0 && prefix <= bits))
    return { problem: `${JSON.stringify(text)} has a prefix length outside 0–${bits}` };
  const value = family === "ipv4" ? ipv4Value(address) : ipv6Value(address);
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  if ((value & hostMask) !== 0n)
    return { problem: `${JSON.stringify(text)} has bits set after its /${prefix} prefix` };
  return { cidr: `${address.toLowerCase()}/${prefix}`, family };
}

function ipv4Value(address: string): bigint {
  return address.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function ipv6Value(address: string): bigint {
  let text = address.toLowerCase();
  // A trailing dotted quad (::ffff:1.2.3.4) is two more 16-bit groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad?.[1]) {
    const v = ipv4Value(quad[1]);
    text = `${text.slice(0, -quad[1].length)}${(v >> 16n).toString(16)}:${(v & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const zeros = tail === undefined ? [] : Array(8 - headGroups.length - tailGroups.length).fill("0");
  return [...headGroups, ...zeros, ...tailGroups].reduce(
    (acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16)),
    0n,
  );
}

/** The match part of one entry's rule: destination, then protocol and port when given. */
function entryMatch(entry: EgressEntry): string {
  const parts = [`${entry.family === "ipv4" ? "ip" : "ip6"} daddr ${entry.cidr}`];
  if (entry.port !== undefined) {
    parts.push(`meta l4proto ${entry.protocol ?? "{ tcp, udp }"} th dport ${entry.port}`);
  } else if (entry.protocol !== undefined) {
    parts.push(`meta l4proto ${entry.protocol}`);
  }
  return parts.join(" ");
}

function quoted(names: readonly string[]): string {
  return names.map((n) => `"${n}"`).join(", ");
}

/**
 * The whole table as one `nft -f` script: create it if absent, delete it, and define it
 * again, all in one transaction, so the kernel switches from the old rules to the new ones
 * with no moment in between. Bridges are sorted, so the same networks give the same text.
 */
export function egressRuleset(table: string, bridges: readonly string[], policy: EgressPolicy): string {
  const names = [...new Set(bridges)].sort();
  const lines = [`table inet ${table}`, `delete table inet ${table}`, `table inet ${table} {`];
  const chain = (name: "input" | "forward", body: string[]) => {
    lines.push(`\tchain ${name} {`, `\t\ttype filter hook ${name} priority filter - 10; policy accept;`);
    for (const rule of body) lines.push(`\t\t${rule}`);
    lines.push("\t}");
  };
  if (names.length === 0) {
    // No tenant network yet: the chains exist (the sweep checks them) and let everything by.
    chain("input", []);
    chain("forward", []);
  } else {
    const tenant = `{ ${quoted(names)} }`;
    const allow = policy.allow.map((e) => `${entryMatch(e)} accept`);
    chain("input", [
      // Only packets from a tenant network are our business.
      `iifname != ${tenant} accept`,
      // Answers to connections the host opened (health checks, the ingress proxy).
      "ct state established,related accept",
      // IPv6 neighbour discovery with the bridge's router address (ARP's counterpart).
      "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
      ...allow,
      // Every other address of the host, on every interface.
      REJECT,
    ]);
    chain("forward", [
      `iifname != ${tenant} accept`,
      "ct state established,related accept",
      // A lease's own network: its services talk to each other (br_netfilter).
      `iifname . oifname { ${names.map((n) => `"${n}" . "${n}"`).join(", ")} } accept`,
      ...allow,
      ...policy.deny.map((e) => `${entryMatch(e)} ${REJECT}`),
      // Other bridges: other tenants, other Docker networks (whatever their addresses).
      `oifname "br-*" ${REJECT}`,
      `oifname "docker0" ${REJECT}`,
      `ip daddr { ${DENIED_IPV4.join(", ")} } ${REJECT}`,
      `ip6 daddr { ${DENIED_IPV6.join(", ")} } ${REJECT}`,
      // A destination NAT to one of the host's own addresses.
      `fib daddr type local ${REJECT}`,
    ]);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

function contains(cidr: string, family: "ipv4" | "ipv6", address: string): boolean {
  const [network = "", length = "0"] = cidr.split("/");
  const bits = family === "ipv4" ? 32 : 128;
  const value = family === "ipv4" ? ipv4Value : ipv6Value;
  const shift = BigInt(bits - Number(length));
  return value(network) >> shift === value(address) >> shift;
}

/**
 * The nameservers of a resolv.conf that tenant containers could not reach under `policy`.
 * Docker's embedded resolver forwards from the container's own network namespace (unless the
 * nameserver is a loopback address, which it asks from the host's), so a private resolver
 * (a VPC's, a LAN router) needs an allow entry for port 53, or names stop resolving.
 */
export function unreachableResolvers(resolvConf: string, policy: EgressPolicy): string[] {
  const out: string[] = [];
  for (const line of resolvConf.split("\n")) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = m?.[1]?.split("%")[0] ?? "";
    const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined;
    if (family === undefined) continue;
    if (family === "ipv4" ? address.startsWith("127.") : ipv6Value(address) === 1n) continue;
    const denied = family === "ipv4" ? DENIED_IPV4 : DENIED_IPV6;
    if (!denied.some((cidr) => contains(cidr, family, address))) continue;
    const allowed = policy.allow.some(
      (e) =>
        e.family === family &&
        contains(e.cidr, family, address) &&
        (e.port === undefined || e.port === 53) &&
        e.protocol !== "tcp",
    );
    if (!allowed) out.push(address);
  }
  return out;
}
