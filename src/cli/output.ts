/**
 * stdout carries only a command's machine-readable result; everything for humans goes
 * to stderr. These helpers keep that rule in one place.
 */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function printText(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function say(text: string): void {
  process.stderr.write(`${text}\n`);
}

/** Thrown by a command to end with a given exit code after it has printed its output. */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}
