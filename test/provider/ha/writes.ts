/** What the fenced writes of the leader-lease tests insert: which instance, at which generation, when. */
export const WRITES_MIGRATION =
  "CREATE TABLE writes (instance text NOT NULL, generation bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())";
