import { readFileSync, statSync } from "node:fs";
import { FredError } from "../core/errors.ts";

/**
 * The PostgreSQL password, never from a URL or a command line: a file only its owner can
 * read (`database_password_file`, `--password-file`; one trailing newline dropped), else
 * FRED_DATABASE_PASSWORD, else none (trust, client certificates, ~/.pgpass). `source`
 * names the file's key or flag in messages.
 */
export function readDatabasePassword(
  file: string | undefined,
  env: Record<string, string | undefined>,
  source = "database_password_file",
): string | undefined {
  if (file === undefined) return env.FRED_DATABASE_PASSWORD || undefined;
  const refused = (why: string) => new FredError("ERR_CONFIG", `${source}: ${why}`);
  let mode: number;
  let text: string;
  try {
    mode = statSync(file).mode;
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw refused(
      `cannot read the password file ${file}: ${(err as NodeJS.ErrnoException).code ?? "unreadable"}`,
    );
  }
  if ((mode & 0o077) !== 0) {
    throw refused(
      `the password file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  const password = text.replace(/\r?\n$/, "");
  if (password === "") throw refused(`the password file ${file} is empty`);
  return password;
}
