import { execFileSync } from "node:child_process";
import { join } from "node:path";

/**
 * A self-signed certificate for `names` (subjectAltName DNS entries, e.g. "*.apps.fred.test"),
 * made with the openssl CLI into `dir`: a client that trusts `cert` as its CA accepts it.
 */
export function selfSignedCert(
  dir: string,
  tag: string,
  names: readonly string[],
): { cert: string; key: string } {
  const cert = join(dir, `${tag}.crt`);
  const key = join(dir, `${tag}.key`);
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "2",
      "-subj",
      `/CN=${names[0]}`,
      "-addext",
      `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}`,
    ],
    { stdio: "ignore" },
  );
  return { cert, key };
}
