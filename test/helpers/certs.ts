import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Test certificates made with the openssl CLI (Node cannot issue X.509 certificates).
 * Every key is P-256 EC: fast to generate. Files land in `dir` as `<name>.key`,
 * `<name>.pem` (and `<name>.csr` / `<name>.ext` for issued ones).
 */
export class TestPki {
  constructor(readonly dir: string) {}

  file(name: string): string {
    return join(this.dir, name);
  }

  /**
   * A self-signed certificate: a CA, or a server certificate that is its own CA.
   * `extension` is one openssl `-addext` value, e.g. "subjectAltName=IP:127.0.0.1".
   */
  selfSigned(name: string, subject: string, extension?: string, days = 2): void {
    openssl(
      "req",
      "-x509",
      ...ecKey(),
      "-nodes",
      "-keyout",
      this.file(`${name}.key`),
      "-subj",
      subject,
      "-days",
      String(days),
      ...(extension === undefined ? [] : ["-addext", extension]),
      "-out",
      this.file(`${name}.pem`),
    );
  }

  /** A leaf certificate signed by `ca`; `extensions` is the body of an openssl extension section. */
  issue(name: string, ca: string, subject: string, extensions: string): void {
    openssl(
      "req",
      ...ecKey(),
      "-nodes",
      "-keyout",
      this.file(`${name}.key`),
      "-subj",
      subject,
      "-out",
      this.file(`${name}.csr`),
    );
    writeFileSync(this.file(`${name}.ext`), `[ext]\n${extensions}`);
    openssl(
      "x509",
      "-req",
      "-in",
      this.file(`${name}.csr`),
      "-CA",
      this.file(`${ca}.pem`),
      "-CAkey",
      this.file(`${ca}.key`),
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      this.file(`${name}.ext`),
      "-extensions",
      "ext",
      "-out",
      this.file(`${name}.pem`),
    );
  }
}

function ecKey(): string[] {
  return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
}

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore" });
}
