import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  keepStoredCredentials,
  REDACTED_PASSWORD,
  redactManifestPayload,
  registryHost,
} from "../../../src/core/manifest/index.ts";
import { expectProblem, expectValid } from "./helpers.ts";

/** A service's registry `credentials`: shape, the host rule, and the masked form shown back. */
const creds = (over: Record<string, unknown> = {}) => ({
  host: "ghcr.io",
  username: "bot",
  password: "s3cret",
  ...over,
});
const stack = (service: Record<string, unknown>) => ({ services: { web: service } });

describe("manifest: registry credentials", () => {
  it("accepts credentials whose host is the image's registry (stack and flat forms)", () => {
    const m = expectValid(stack({ image: "ghcr.io/acme/web:1", credentials: creds() }));
    assert.deepEqual(m.services.web?.credentials, creds());
    expectValid({
      image: "registry.example.com:5000/web:1",
      credentials: creds({ host: "registry.example.com:5000" }),
    });
    // Docker Hub, named either way, for an image without a registry part.
    expectValid(stack({ image: "acme/web:1", credentials: creds({ host: "docker.io" }) }));
    expectValid(stack({ image: "acme/web:1", credentials: creds({ host: "index.docker.io" }) }));
  });

  it("refuses a host that is not the image's registry, at credentials/host", () => {
    expectProblem(
      stack({ image: "ghcr.io/acme/web:1", credentials: creds({ host: "quay.io" }) }),
      "/services/web/credentials/host",
      /credentials\.host "quay\.io" is not the registry of the image \("ghcr\.io"\)/,
    );
    expectProblem(
      stack({ image: "acme/web:1", credentials: creds() }),
      "/services/web/credentials/host",
      /not the registry of the image \("docker\.io"\)/,
    );
  });

  it("refuses malformed credentials field by field", () => {
    const image = "ghcr.io/acme/web:1";
    expectProblem(
      stack({ image, credentials: creds({ host: "https://ghcr.io/" }) }),
      "/services/web/credentials/host",
      /registry host/,
    );
    expectProblem(
      stack({ image, credentials: { host: "ghcr.io", username: "bot" } }),
      "/services/web/credentials/password",
      /required/,
    );
    expectProblem(
      stack({ image, credentials: creds({ username: "" }) }),
      "/services/web/credentials/username",
      /empty/,
    );
    expectProblem(
      stack({ image, credentials: creds({ token: "x" }) }),
      "/services/web/credentials/token",
      /unknown field/,
    );
    expectProblem(stack({ image, credentials: "bot:s3cret" }), "/services/web/credentials", /object/);
  });

  it("registryHost reads a bare domain with an optional port, nothing else", () => {
    assert.equal(registryHost("ghcr.io"), "ghcr.io");
    assert.equal(registryHost("127.0.0.1:5000"), "127.0.0.1:5000");
    assert.equal(registryHost("index.docker.io"), "docker.io");
    assert.equal(registryHost("https://ghcr.io"), undefined);
    assert.equal(registryHost("ghcr.io/acme"), undefined);
  });

  it("redactManifestPayload masks every password and leaves documents without credentials as they are", () => {
    const doc = { services: { a: { image: "ghcr.io/x:1", credentials: creds() }, b: { image: "nginx" } } };
    const masked = JSON.parse(
      Buffer.from(redactManifestPayload(Buffer.from(JSON.stringify(doc)))).toString(),
    );
    assert.deepEqual(masked.services.a.credentials, creds({ password: REDACTED_PASSWORD }));
    assert.deepEqual(masked.services.b, { image: "nginx" });
    const flat = { image: "ghcr.io/x:1", credentials: creds() };
    const flatMasked = JSON.parse(
      Buffer.from(redactManifestPayload(Buffer.from(JSON.stringify(flat)))).toString(),
    );
    assert.equal(flatMasked.credentials.password, REDACTED_PASSWORD);
    const plain = Buffer.from('{ "services": { "b": { "image": "nginx" } } }');
    assert.equal(redactManifestPayload(plain), plain, "no credentials: the very same bytes");
    const notJson = Buffer.from("not json");
    assert.equal(redactManifestPayload(notJson), notJson);
  });

  it("keepStoredCredentials restores a masked password only for the same service, host and username", () => {
    const bytes = (doc: unknown) => Buffer.from(JSON.stringify(doc));
    const read = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString());
    const held = bytes({
      services: {
        a: { image: "ghcr.io/x:1", credentials: creds() },
        b: { image: "ghcr.io/y:1", credentials: creds({ password: "other" }) },
      },
    });
    const sent = redactManifestPayload(held);
    assert.deepEqual(read(keepStoredCredentials(sent, held)), read(held), "a masked re-send gets both back");
    const moved = bytes({
      services: {
        a: { image: "ghcr.io/x:2", credentials: creds({ password: REDACTED_PASSWORD }) },
        b: {
          image: "ghcr.io/y:1",
          credentials: creds({ username: "someone-else", password: REDACTED_PASSWORD }),
        },
        c: { image: "ghcr.io/x:1", credentials: creds({ password: REDACTED_PASSWORD }) },
      },
    });
    const kept = read(keepStoredCredentials(moved, held));
    assert.equal(
      kept.services.a.credentials.password,
      creds().password,
      "same service, host, user: restored",
    );
    assert.equal(kept.services.b.credentials.password, REDACTED_PASSWORD, "another username: still masked");
    assert.equal(kept.services.c.credentials.password, REDACTED_PASSWORD, "another service: never borrows");
    const fresh = bytes({
      services: { a: { image: "ghcr.io/x:1", credentials: creds({ password: "new" }) } },
    });
    assert.equal(keepStoredCredentials(fresh, held), fresh, "a real password is never replaced");
    const flat = bytes({ image: "ghcr.io/x:1", credentials: creds() });
    assert.deepEqual(
      read(keepStoredCredentials(redactManifestPayload(flat), flat)),
      read(flat),
      "flat shape",
    );
    assert.equal(keepStoredCredentials(sent, undefined), sent, "nothing held: unchanged");
    assert.equal(keepStoredCredentials(sent, bytes({ services: {} })), sent);
    const notJson = Buffer.from("not json");
    assert.equal(keepStoredCredentials(notJson, held), notJson);
  });
});
