import { randomUUID } from "node:crypto";

/** A leader acts on the chain and the backends; a standby serves reads and waits to take over. */
export type Role = "leader" | "standby";

export interface LeaderState {
  role: Role;
  /** This instance's generation while it leads. */
  generation: number | undefined;
  /** The holder last seen (this instance's id while it leads); undefined when none is live. */
  leader: string | undefined;
}

/**
 * Who leads among the providerd instances of one provider, as /health, /readyz and the
 * fred_leader metrics report it (issue #36). An instance on SQLite runs alone: it leads for
 * its whole life (`soleLeader`). Instances sharing a PostgreSQL database hold an election
 * (LeaderLease, leader-lease.ts).
 */
export interface Leadership {
  /** This process's id, new at every start. */
  readonly instance: string;
  /** This instance's role now, its fencing generation while it leads, and the leader last seen. */
  current(): LeaderState;
}

/** The only instance there is: the leader, at generation 1. */
export function soleLeader(instance: string = randomUUID()): Leadership {
  const state: LeaderState = { role: "leader", generation: 1, leader: instance };
  return { instance, current: () => ({ ...state }) };
}
