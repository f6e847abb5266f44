import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pinOf, pullFailureKind } from "../../../src/backend/docker/images.ts";
import { FredError } from "../../../src/core/errors.ts";
import { imageRepository } from "../../../src/core/manifest/index.ts";

/** The pure parts of image pulling and pinning (the engine-backed paths: images-registry.test.ts). */
const engineError = (statusCode: number, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode, json: { message } });

describe("docker images: pull failure kinds and pins", () => {
  it("sorts refusals into tenant-safe kinds", () => {
    assert.equal(
      pullFailureKind(engineError(404, "manifest for x:1 not found: manifest unknown")),
      "not_found",
    );
    assert.equal(
      pullFailureKind(engineError(500, "Head https://r/v2/x/manifests/1: no basic auth credentials")),
      "unauthorized",
    );
    assert.equal(pullFailureKind(engineError(500, "unauthorized: authentication required")), "unauthorized");
    assert.equal(pullFailureKind(engineError(401, "whatever")), "unauthorized");
    assert.equal(
      pullFailureKind(new Error("pull access denied for x, repository does not exist")),
      "unauthorized",
    );
    assert.equal(pullFailureKind(new Error("manifest unknown: manifest unknown")), "not_found");
    assert.equal(
      pullFailureKind(new FredError("ERR_DOCKER_IMAGE_PULL_TIMEOUT", "docker image pull did not finish")),
      "timeout",
    );
    assert.equal(pullFailureKind(engineError(500, "connection reset by peer")), "failed");
  });

  it("imageRepository strips tag and digest, never a registry port", () => {
    assert.equal(imageRepository("127.0.0.1:5000/app:1"), "127.0.0.1:5000/app");
    assert.equal(imageRepository("127.0.0.1:5000/app"), "127.0.0.1:5000/app");
    assert.equal(imageRepository(`nginx@sha256:${"a".repeat(64)}`), "nginx");
    assert.equal(imageRepository("ghcr.io/acme/web:1.2"), "ghcr.io/acme/web");
  });

  it("pins the repo digest of the reference's repository, else the image ID", () => {
    const id = `sha256:${"1".repeat(64)}`;
    const d = (name: string, n: string) => `${name}@sha256:${n.repeat(64)}`;
    assert.equal(
      pinOf("127.0.0.1:5000/app:1", id, [d("other/app", "2"), d("127.0.0.1:5000/app", "3")]),
      d("127.0.0.1:5000/app", "3"),
    );
    // Docker reports Hub images in their familiar form.
    assert.equal(pinOf("docker.io/library/nginx:1", id, [d("nginx", "4")]), d("nginx", "4"));
    assert.equal(pinOf("nginx:1", id, [d("nginx", "4")]), d("nginx", "4"));
    // A locally built image has no repo digest: its ID is the pin.
    assert.equal(pinOf("fred-test/httpd:1", id, []), id);
  });
});
