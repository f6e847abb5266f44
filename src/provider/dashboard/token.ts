import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readFileSync, writeSync } from "node:fs";
import { FredError } from "../../core/errors.ts";

/**
 * The operator token: the bearer secret of the dashboard's `/api/` routes, kept in
 * operator_token_file. A missing file is created (32 random bytes, hex, mode 0600,
 * exclusively, so a racing creator never gets a second token); an existing one must be
 * readable by its owner only and hold a token. The token itself is never logged.
 */
export const OPERATOR_TOKEN_KEY = "operator_token_file";
const TOKEN_BYTES = 32;
/** A token shorter than this is refused: it could be guessed through the rate limit. */
const MIN_TOKEN_CHARS = 16;

export interface OperatorToken {
  token: string;
  path: string;
  /** The file was made now (providerd logs its path). */
  created: boolean;
}

function refuse(path: string, why: string): FredError {
  return new FredError("ERR_CONFIG", `${OPERATOR_TOKEN_KEY} ${path} ${why}`);
}

/** Reads the token at `path`, creating the file first when there is none. */
export function ensureOperatorToken(path: string): OperatorToken {
  try {
    const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    const token = randomBytes(TOKEN_BYTES).toString("hex");
    try {
      writeSync(fd, `${token}\n`);
    } finally {
      closeSync(fd);
    }
    return { token, path, created: true };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EEXIST") throw refuse(path, `cannot be created: ${code ?? String(err)}`);
  }
  return { token: readOperatorToken(path), path, created: false };
}

/** The token in an existing file, refused (naming the key) when others may read it or it is empty. */
export function readOperatorToken(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch (err) {
    throw refuse(path, `cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw refuse(path, "is not a regular file");
    if ((stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, "0");
      throw refuse(
        path,
        `has mode ${mode}: it must not be readable or writable by group or others (chmod 600)`,
      );
    }
    const token = readFileSync(fd, "utf8").trim();
    if (token === "") throw refuse(path, "is empty: delete it to have providerd make a new token");
    if (token.length < MIN_TOKEN_CHARS || /\s/.test(token))
      throw refuse(path, `must hold one token of at least ${MIN_TOKEN_CHARS} characters without spaces`);
    return token;
  } finally {
    closeSync(fd);
  }
}
