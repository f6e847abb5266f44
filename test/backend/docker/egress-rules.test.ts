import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type EgressEntry,
  type EgressPolicy,
  egressRuleset,
  egressTableName,
  parseCidr,
  unreachableResolvers,
} from "../../../src/backend/docker/egress-rules.ts";

/**
 * The egress rule text from config and networks, as a table: what each CIDR becomes, which
 * rules a set of bridges and entries gives, and in which order. The kernel side (that the
 * text loads and filters) is test/backend/docker/egress.test.ts.
 */

const NONE: EgressPolicy = { allow: [], deny: [] };
const REJECT = "reject with icmpx type admin-prohibited";

function entry(cidr: string, extra: Partial<EgressEntry> = {}): EgressEntry {
  const parsed = parseCidr(cidr);
  if ("problem" in parsed) throw new Error(parsed.problem);
  return { ...parsed, ...extra };
}

/** The rules of one chain, in order, without the base chain's type line. */
function rules(script: string, chain: "input" | "forward"): string[] {
  const body = script.split(`\tchain ${chain} {\n`)[1]?.split("\n\t}")[0] ?? "";
  return body
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("type filter"));
}

describe("egress rules: CIDRs", () => {
  const cases: [string, string | RegExp][] = [
    ["10.0.0.0/8", "10.0.0.0/8"],
    ["10.0.0.2", "10.0.0.2/32"],
    [" 192.168.1.0/24 ", "192.168.1.0/24"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["FD00::/8", "fd00::/8"],
    ["2001:db8::1", "2001:db8::1/128"],
    ["::/0", "::/0"],
    ["::ffff:10.0.0.0/104", "::ffff:10.0.0.0/104"],
    ["10.1.2.3/8", /bits set after its \/8 prefix/],
    ["fe80::1/10", /bits set after its \/10 prefix/],
    ["10.0.0.0/33", /prefix length outside 0–32/],
    ["2001:db8::/129", /prefix length outside 0–128/],
    ["10.0.0.0/x", /prefix length/],
    ["10.0.0/8", /not an IPv4 or IPv6/],
    ["example.com", /not an IPv4 or IPv6/],
    ["10.0.0.0/8/8", /not an address or CIDR/],
    ["", /not an IPv4 or IPv6/],
  ];
  for (const [text, want] of cases) {
    it(`${JSON.stringify(text)} → ${want}`, () => {
      const got = parseCidr(text);
      if (typeof want === "string") assert.deepEqual("cidr" in got ? got.cidr : got, want);
      else assert.match("problem" in got ? got.problem : `accepted as ${got.cidr}`, want);
    });
  }
});

describe("egress rules: the ruleset", () => {
  it("names one table per storage id, valid as an nft identifier", () => {
    const a = egressTableName("0190f3a2-7c1e-7000-8000-000000000001");
    assert.match(a, /^fred_egress_[0-9a-f]{16}$/);
    assert.equal(a, egressTableName("0190f3a2-7c1e-7000-8000-000000000001"));
    assert.notEqual(a, egressTableName("0190f3a2-7c1e-7000-8000-000000000002"));
  });

  it("replaces the whole table in one script, chains before Docker's filter", () => {
    const script = egressRuleset("t", ["br-b", "br-a"], NONE);
    const lines = script.split("\n");
    assert.deepEqual(lines.slice(0, 3), ["table inet t", "delete table inet t", "table inet t {"]);
    assert.match(script, /chain input \{\n\t\ttype filter hook input priority filter - 10; policy accept;/);
    assert.match(
      script,
      /chain forward \{\n\t\ttype filter hook forward priority filter - 10; policy accept;/,
    );
    assert.equal(script, egressRuleset("t", ["br-a", "br-b", "br-a"], NONE), "sorted and deduplicated");
  });

  it("without tenant networks the chains exist and hold no rule", () => {
    const script = egressRuleset("t", [], { allow: [entry("10.0.0.2")], deny: [] });
    assert.deepEqual(rules(script, "input"), []);
    assert.deepEqual(rules(script, "forward"), []);
  });

  it("the host: only answers, neighbour discovery and allowed entries pass from a tenant bridge", () => {
    const script = egressRuleset("t", ["br-a"], { allow: [entry("192.0.2.53", { port: 53 })], deny: [] });
    assert.deepEqual(rules(script, "input"), [
      'iifname != { "br-a" } accept',
      "ct state established,related accept",
      "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
      "ip daddr 192.0.2.53/32 meta l4proto { tcp, udp } th dport 53 accept",
      REJECT,
    ]);
  });

  it("forwarded: own bridge, then allow, then deny, then the inside of the provider", () => {
    const policy: EgressPolicy = {
      allow: [entry("10.0.0.2", { port: 53, protocol: "udp" }), entry("fd00::/8", { protocol: "tcp" })],
      deny: [entry("203.0.113.0/24", { port: 25, protocol: "tcp" }), entry("2001:db8::/32")],
    };
    assert.deepEqual(rules(egressRuleset("t", ["br-a", "br-b"], policy), "forward"), [
      'iifname != { "br-a", "br-b" } accept',
      "ct state established,related accept",
      'iifname . oifname { "br-a" . "br-a", "br-b" . "br-b" } accept',
      "ip daddr 10.0.0.2/32 meta l4proto udp th dport 53 accept",
      "ip6 daddr fd00::/8 meta l4proto tcp accept",
      `ip daddr 203.0.113.0/24 meta l4proto tcp th dport 25 ${REJECT}`,
      `ip6 daddr 2001:db8::/32 ${REJECT}`,
      `oifname "br-*" ${REJECT}`,
      `oifname "docker0" ${REJECT}`,
      `ip daddr { 10.0.0.0/8, 100.64.0.0/10, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16 } ${REJECT}`,
      `ip6 daddr { fc00::/7, fe80::/10 } ${REJECT}`,
      `fib daddr type local ${REJECT}`,
    ]);
  });
});

describe("egress rules: the host's resolvers", () => {
  const conf = [
    "# generated",
    "search example.internal",
    "nameserver 10.255.255.53",
    "nameserver 127.0.0.53",
    "nameserver 1.1.1.1",
    "nameserver fd00::53",
    "nameserver fe80::1%eth0",
    "nameserver ::1",
    "options edns0",
  ].join("\n");
  const cases: [string, EgressPolicy, string[]][] = [
    ["no allow entries: the private and link-local ones", NONE, ["10.255.255.53", "fd00::53", "fe80::1"]],
    [
      "an allow entry with port 53 covers its network",
      { allow: [entry("10.0.0.0/8", { port: 53 }), entry("fc00::/7")], deny: [] },
      ["fe80::1"],
    ],
    [
      "a tcp-only entry does not cover DNS over udp",
      { allow: [entry("10.255.255.53", { protocol: "tcp" })], deny: [] },
      ["10.255.255.53", "fd00::53", "fe80::1"],
    ],
    [
      "an entry for another port does not either",
      { allow: [entry("10.255.255.53", { port: 853 })], deny: [] },
      ["10.255.255.53", "fd00::53", "fe80::1"],
    ],
  ];
  for (const [what, policy, want] of cases) {
    it(what, () => assert.deepEqual(unreachableResolvers(conf, policy), want));
  }
  it("a resolv.conf with only loopback or public resolvers needs nothing", () => {
    assert.deepEqual(unreachableResolvers("nameserver 127.0.0.53\nnameserver 9.9.9.9\n", NONE), []);
    assert.deepEqual(unreachableResolvers("", NONE), []);
  });
});
