import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { expectProblem, expectValid, flat, problemsOf } from "./helpers.ts";

const healthy = { image: "postgres:16", health_check: { test: ["CMD", "pg_isready"] } };
const dep = (condition: string) => ({ condition });

/** A chain s0 → s1 → … → s<edges>, i.e. `edges` depends_on hops. */
function chain(edges: number): Record<string, unknown> {
  const services: Record<string, unknown> = {};
  for (let i = 0; i <= edges; i++) {
    services[`s${i}`] =
      i < edges ? flat({ depends_on: { [`s${i + 1}`]: dep("service_started") } }) : flat({});
  }
  return { services };
}

describe("stack shape", () => {
  it("accepts several services and keeps their names", () => {
    const manifest = expectValid({ services: { web: flat({}), db: healthy } });
    assert.equal(manifest.format, "stack");
    assert.deepEqual(Object.keys(manifest.services), ["web", "db"]);
  });

  it("needs at least one service", () => {
    expectValid({ services: { app: flat({}) } });
    expectProblem({ services: {} }, "/services", /at least one/);
  });

  it("services must be an object", () => {
    expectProblem({ services: [flat({})] }, "/services", /object/);
    expectProblem({ services: null }, "/services", /object, not null/);
  });

  it("a service must be an object, not null", () => {
    expectProblem({ services: { web: null } }, "/services/web", /object, not null/);
  });

  it("allows no other top-level key next to services", () => {
    expectProblem({ services: { web: flat({}) }, image: "x" }, "/image", /unknown field "image"/);
    expectProblem({ services: { web: flat({}) }, version: "3" }, "/version", /unknown field/);
  });

  it("reports unknown keys inside a service at their own pointer", () => {
    expectProblem(
      { services: { web: flat({ restart: "always" }) } },
      "/services/web/restart",
      /unknown field/,
    );
  });
});

describe("service names", () => {
  for (const name of ["a", "0", "web", "web-1", "a1-b2-c3", "x".repeat(63)]) {
    it(`accepts ${JSON.stringify(name.length > 10 ? `${name.length} chars` : name)}`, () => {
      expectValid({ services: { [name]: flat({}) } });
    });
  }
  for (const name of ["Web", "-web", "web-", "web_1", "web.1", "", "wéb", "x".repeat(64)]) {
    it(`refuses ${JSON.stringify(name.length > 10 ? `${name.length} chars` : name)}`, () => {
      expectProblem({ services: { [name]: flat({}) } }, `/services/${name}`, /service name/);
    });
  }
});

describe("depends_on", () => {
  it("is only allowed in stacks (flat: a non-empty map is refused, an empty one is fine)", () => {
    expectValid(flat({ depends_on: {} }));
    expectProblem(
      flat({ depends_on: { db: dep("service_started") } }),
      "/depends_on",
      /only allowed in stack/,
    );
  });

  it("must name an existing service", () => {
    expectValid({ services: { web: flat({ depends_on: { db: dep("service_started") } }), db: flat({}) } });
    expectProblem(
      { services: { web: flat({ depends_on: { cache: dep("service_started") } }), db: flat({}) } },
      "/services/web/depends_on/cache",
      /unknown service "cache"/,
    );
  });

  it("may not name the service itself", () => {
    expectProblem(
      { services: { web: flat({ depends_on: { web: dep("service_started") } }) } },
      "/services/web/depends_on/web",
      /itself/,
    );
  });

  it("needs a condition", () => {
    expectProblem(
      { services: { web: flat({ depends_on: { db: {} } }), db: flat({}) } },
      "/services/web/depends_on/db/condition",
      /service_started/,
    );
  });

  it("accepts only service_started and service_healthy", () => {
    expectValid({ services: { web: flat({ depends_on: { db: dep("service_healthy") } }), db: healthy } });
    expectProblem(
      { services: { web: flat({ depends_on: { db: dep("service_completed_successfully") } }), db: healthy } },
      "/services/web/depends_on/db/condition",
      /service_started.*service_healthy/,
    );
  });

  it("refuses unknown keys in a dependency", () => {
    expectProblem(
      {
        services: {
          web: flat({ depends_on: { db: { condition: "service_started", restart: true } } }),
          db: flat({}),
        },
      },
      "/services/web/depends_on/db/restart",
      /unknown field/,
    );
  });

  it("service_healthy needs an active health check on the target", () => {
    expectValid({ services: { web: flat({ depends_on: { db: dep("service_started") } }), db: flat({}) } });
    expectProblem(
      { services: { web: flat({ depends_on: { db: dep("service_healthy") } }), db: flat({}) } },
      "/services/web/depends_on/db",
      /needs a health_check/,
    );
    expectProblem(
      {
        services: {
          web: flat({ depends_on: { db: dep("service_healthy") } }),
          db: flat({ health_check: { test: ["NONE"] } }),
        },
      },
      "/services/web/depends_on/db",
      /not NONE/,
    );
  });

  it("refuses a two-service cycle", () => {
    const problems = problemsOf({
      services: {
        a: flat({ depends_on: { b: dep("service_started") } }),
        b: flat({ depends_on: { a: dep("service_started") } }),
      },
    });
    assert.ok(
      problems.some((p) => /cycle: a -> b -> a/.test(p.message)),
      JSON.stringify(problems),
    );
  });

  it("refuses a longer cycle and names it", () => {
    const problems = problemsOf({
      services: {
        a: flat({ depends_on: { b: dep("service_started") } }),
        b: flat({ depends_on: { c: dep("service_started") } }),
        c: flat({ depends_on: { a: dep("service_started") } }),
        d: flat({ depends_on: { a: dep("service_started") } }),
      },
    });
    const cycles = problems.filter((p) => /cycle/.test(p.message));
    assert.equal(cycles.length, 1, JSON.stringify(problems));
    assert.match(cycles[0]?.message ?? "", /a -> b -> c -> a/);
    assert.equal(cycles[0]?.path, "/services/c/depends_on/a");
  });

  it("allows diamonds", () => {
    expectValid({
      services: {
        top: flat({ depends_on: { left: dep("service_started"), right: dep("service_started") } }),
        left: flat({ depends_on: { base: dep("service_healthy") } }),
        right: flat({ depends_on: { base: dep("service_started") } }),
        base: healthy,
      },
    });
  });

  it("allows a chain 10 deep and refuses one 11 deep", () => {
    expectValid(chain(10));
    expectProblem(chain(11), "/services/s0", /11 deep; at most 10/);
  });

  it("judges depth the same whatever order services are written in", () => {
    const doc = chain(11) as { services: Record<string, unknown> };
    const reversed = { services: Object.fromEntries(Object.entries(doc.services).reverse()) };
    expectProblem(reversed, "/services/s0", /11 deep/);
  });
});

describe("all problems at once", () => {
  it("reports problems from several services and rules in one answer", () => {
    const problems = problemsOf({
      services: {
        web: flat({ image: "", depends_on: { cache: dep("service_started") }, env: { PATH: "/x" } }),
        db: flat({ tmpfs: ["/proc"], volumes: [] }),
        Bad: flat({}),
      },
    });
    const paths = problems.map((p) => p.path).sort();
    assert.deepEqual(paths, [
      "/services/Bad",
      "/services/db/tmpfs/0",
      "/services/db/volumes",
      "/services/web/depends_on/cache",
      "/services/web/env/PATH",
      "/services/web/image",
    ]);
  });
});
