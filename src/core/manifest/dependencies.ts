import { MANIFEST_LIMITS } from "./limits.ts";

/**
 * Cross-service `depends_on` rules of a stack (fred-wire §3.4): targets exist, nobody
 * depends on itself, `service_healthy` needs an active health check on the target, no
 * cycles, and no chain longer than the depth limit (diamonds are fine).
 *
 * Go walks its map in random order, so its depth check depends on where the walk starts;
 * here depth is the longest chain of edges, which gives the same answer every time.
 */

export interface DependencyNode {
  /** Dependency target → condition text as written (may be invalid; that is the schema's job). */
  dependsOn: ReadonlyMap<string, unknown>;
  hasActiveHealthCheck: boolean;
}

export interface DependencyProblem {
  /** Path below `/services`: [service] or [service, "depends_on", target]. */
  path: string[];
  message: string;
}

export function checkDependencies(services: ReadonlyMap<string, DependencyNode>): DependencyProblem[] {
  const problems: DependencyProblem[] = [];
  const edges = new Map<string, string[]>();
  for (const [name, node] of services) {
    const usable: string[] = [];
    for (const [target, condition] of node.dependsOn) {
      const path = [name, "depends_on", target];
      if (target === name) {
        problems.push({ path, message: "a service cannot depend on itself" });
        continue;
      }
      const targetNode = services.get(target);
      if (targetNode === undefined) {
        problems.push({ path, message: `depends on unknown service ${JSON.stringify(target)}` });
        continue;
      }
      if (condition === "service_healthy" && !targetNode.hasActiveHealthCheck) {
        problems.push({
          path,
          message: `condition service_healthy needs a health_check on ${JSON.stringify(target)} (not NONE)`,
        });
      }
      usable.push(target);
    }
    edges.set(name, usable);
  }
  problems.push(...checkGraphShape(edges));
  return problems;
}

/** Cycles and over-long chains, each reported once, in a deterministic order. */
function checkGraphShape(edges: ReadonlyMap<string, string[]>): DependencyProblem[] {
  const problems: DependencyProblem[] = [];
  const state = new Map<string, "visiting" | "done">();
  /** Longest chain (in edges) starting at a node; only known for nodes off every cycle. */
  const depth = new Map<string, number>();
  const stack: string[] = [];
  let depthReported = false;

  const visit = (name: string): number => {
    const seen = state.get(name);
    if (seen === "done") return depth.get(name) ?? 0;
    if (seen === "visiting") return 0; // the caller reports the cycle
    state.set(name, "visiting");
    stack.push(name);
    let longest = 0;
    for (const target of edges.get(name) ?? []) {
      if (state.get(target) === "visiting") {
        const cycle = [...stack.slice(stack.indexOf(target)), target];
        problems.push({
          path: [name, "depends_on", target],
          message: `depends_on cycle: ${cycle.join(" -> ")}`,
        });
        continue;
      }
      longest = Math.max(longest, visit(target) + 1);
    }
    stack.pop();
    state.set(name, "done");
    depth.set(name, longest);
    if (longest > MANIFEST_LIMITS.maxDependencyDepth && !depthReported) {
      depthReported = true;
      problems.push({
        path: [name],
        message: `depends_on chain starting at ${JSON.stringify(name)} is ${longest} deep; at most ${MANIFEST_LIMITS.maxDependencyDepth} is allowed`,
      });
    }
    return longest;
  };

  for (const name of [...edges.keys()].sort()) visit(name);
  return problems;
}
