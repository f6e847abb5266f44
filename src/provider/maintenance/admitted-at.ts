/**
 * The admission stamp of a maintenance command: microseconds since the epoch in the
 * journal, RFC 3339 UTC with six fraction digits on the wire ("2024-01-16T14:00:00.000001Z").
 * A backend echoes it as maintenance_admitted_at, possibly written with another number of
 * fraction digits, so the echo is compared as an instant, never as text.
 */
export function formatAdmittedAt(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString(); // …T14:00:00.000Z
  const micros = String(us % 1_000_000).padStart(6, "0");
  return `${iso.slice(0, 19)}.${micros}Z`;
}

const STAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/** The instant of an RFC 3339 UTC stamp in nanoseconds; undefined when it is not one. */
export function instantNs(text: string): bigint | undefined {
  const m = STAMP.exec(text);
  if (m === null) return undefined;
  const seconds = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(seconds)) return undefined;
  const fraction = (m[2] ?? "").padEnd(9, "0");
  return BigInt(seconds) * 1_000_000n + BigInt(fraction);
}

/** True when `echo` names exactly the instant `us`. */
export function sameInstant(us: number, echo: string): boolean {
  return instantNs(echo) === BigInt(us) * 1000n;
}

/** The next stamp of a lease: now, or one microsecond after its newest command. */
export function nextAdmittedAt(nowMs: number, newestUs: number | undefined): number {
  const now = nowMs * 1000;
  return newestUs === undefined || now > newestUs ? now : newestUs + 1;
}
