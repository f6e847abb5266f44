import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { formatGoDuration, parseGoDuration } from "../../../src/core/duration.ts";
import { formatManifest, parseManifest } from "../../../src/core/manifest/index.ts";

const BLOCKED_ENV = /^(PATH$|LD_|FRED_|DOCKER_)/i;
const RESERVED_LABEL = /^(fred|traefik)\./i;

const serviceName = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
const portKey = fc
  .tuple(fc.integer({ min: 1, max: 65535 }), fc.constantFrom("tcp", "udp", "TCP", "Udp"))
  .map(([port, protocol]) => `${port}/${protocol}`);
const nanoseconds = fc.integer({ min: 0, max: 3_600_000_000_000 });
const duration = fc.oneof(nanoseconds, nanoseconds.map(formatGoDuration));

const healthCheck = fc.record(
  {
    test: fc.oneof(
      fc.constant(["NONE"]),
      fc.array(fc.string(), { minLength: 1, maxLength: 3 }).map((rest) => ["CMD", ...rest]),
      fc.string().map((shell) => ["CMD-SHELL", shell]),
    ),
    interval: duration,
    timeout: duration,
    retries: fc.nat({ max: 10 }),
    start_period: duration,
  },
  { requiredKeys: ["test"] },
);

const service = fc.record(
  {
    image: fc.stringMatching(/^[a-z][a-z0-9./:-]{0,30}$/),
    // "80/tcp" and "80/TCP" name one port (refused as a duplicate), so keys are unique
    // ignoring case.
    ports: fc
      .uniqueArray(fc.tuple(portKey, fc.record({ host_port: fc.constant(0) }, { requiredKeys: [] })), {
        maxLength: 5,
        selector: ([key]) => key.toLowerCase(),
      })
      .map((entries) => Object.fromEntries(entries)),
    env: fc.dictionary(
      fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,12}$/).filter((k) => !BLOCKED_ENV.test(k)),
      fc.string(),
      { maxKeys: 8 },
    ),
    command: fc.array(fc.string(), { maxLength: 3 }),
    args: fc.array(fc.string(), { maxLength: 3 }),
    labels: fc.dictionary(
      fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9.-]{0,12}$/).filter((k) => !RESERVED_LABEL.test(k)),
      fc.string(),
      { maxKeys: 5 },
    ),
    health_check: healthCheck,
    tmpfs: fc.subarray(["/var/cache", "/tmp/a", "/run/mysqld", "/srv/x/"], { maxLength: 4 }),
    user: fc.constantFrom("", "1000", "1000:1000", "postgres", "app:staff"),
    stop_grace_period: fc.oneof(
      fc.integer({ min: 1e9, max: 120e9 }),
      fc.integer({ min: 1, max: 120 }).map((s) => `${s}s`),
    ),
    init: fc.boolean(),
    expose: fc.uniqueArray(fc.integer({ min: 1, max: 65535 }).map(String), { maxLength: 5 }),
  },
  { requiredKeys: ["image"] },
);

/**
 * A stack whose depends_on edges only point "forward" in name order, so it is acyclic
 * and at most 5 deep; service_healthy only where the target has an active check.
 */
const stack = fc
  .uniqueArray(fc.tuple(serviceName, service), { minLength: 1, maxLength: 6, selector: ([name]) => name })
  .chain((list) =>
    fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean()), { maxLength: 8 }).map((edges) => {
      const services: Record<string, Record<string, unknown>> = Object.fromEntries(
        list.map(([name, spec]) => [name, { ...spec }]),
      );
      const names = list.map(([name]) => name);
      for (const [a, b, healthy] of edges) {
        const from = a % names.length;
        const to = b % names.length;
        if (from >= to) continue;
        const target = services[names[to] as string] as { health_check?: { test: string[] } };
        const active = target.health_check !== undefined && target.health_check.test[0] !== "NONE";
        const deps = (services[names[from] as string]?.["depends_on"] ?? {}) as Record<string, unknown>;
        deps[names[to] as string] = { condition: healthy && active ? "service_healthy" : "service_started" };
        (services[names[from] as string] as Record<string, unknown>)["depends_on"] = deps;
      }
      return { services };
    }),
  );

describe("manifest properties", () => {
  it("every generated valid stack parses, and format → parse gives it back unchanged", () => {
    fc.assert(
      fc.property(stack, (doc) => {
        const first = parseManifest(JSON.stringify(doc));
        assert.ok(first.ok, JSON.stringify(first.ok ? [] : first.problems));
        assert.deepEqual(Object.keys(first.manifest.services).sort(), Object.keys(doc.services).sort());
        const second = parseManifest(JSON.stringify(formatManifest(first.manifest)));
        assert.ok(second.ok);
        assert.deepEqual(second.manifest, first.manifest);
      }),
      { numRuns: 150 },
    );
  });

  it("an unknown key added to any service is reported at exactly its pointer", () => {
    fc.assert(
      fc.property(stack, fc.nat(), fc.stringMatching(/^[a-z_]{1,12}$/), (generated, pick, key) => {
        // fast-check hands the same value back while shrinking: mutate a copy only.
        const doc = structuredClone(generated);
        const names = Object.keys(doc.services);
        const target = names[pick % names.length] as string;
        const spec = doc.services[target] as Record<string, unknown>;
        fc.pre(
          ![
            "image",
            "ports",
            "env",
            "command",
            "args",
            "labels",
            "health_check",
            "tmpfs",
            "user",
            "depends_on",
            "stop_grace_period",
            "init",
            "expose",
          ].includes(key),
        );
        // defineProperty, so that even "__proto__" becomes an own (serialised) key.
        Object.defineProperty(spec, key, { value: 1, enumerable: true, writable: true, configurable: true });
        const result = parseManifest(JSON.stringify(doc));
        assert.ok(!result.ok);
        const message = key === "__proto__" ? 'the key "__proto__" is not allowed' : `unknown field "${key}"`;
        assert.deepEqual(result.problems, [{ path: `/services/${target}/${key}`, message }]);
      }),
      { numRuns: 100 },
    );
  });

  it("Go duration text round-trips through format and parse", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), (ns) => {
        assert.equal(parseGoDuration(formatGoDuration(ns)), ns);
      }),
      { numRuns: 500 },
    );
  });

  it("stop_grace_period means the same in nanoseconds and in Go text", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1e9, max: 120e9 }), (ns) => {
        const asNumber = parseManifest(JSON.stringify({ image: "a", stop_grace_period: ns }));
        const asText = parseManifest(JSON.stringify({ image: "a", stop_grace_period: formatGoDuration(ns) }));
        assert.ok(asNumber.ok && asText.ok);
        assert.equal(asText.manifest.services["app"]?.stop_grace_period, ns);
        assert.deepEqual(asText.manifest, asNumber.manifest);
      }),
    );
  });

  it("never throws, whatever JSON or text it is given", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify({ services: v })),
        ),
        (text) => {
          const result = parseManifest(text);
          assert.equal(typeof result.ok, "boolean");
        },
      ),
      { numRuns: 300 },
    );
  });
});
