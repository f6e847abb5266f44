import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyLogBudget, demuxLogStream, lastLines } from "../../../src/backend/docker/logs.ts";
import {
  type ContainerRow,
  connectionInfo,
  groupByLease,
  instancePhase,
  observeLease,
  servingRows,
} from "../../../src/backend/docker/observe.ts";

const LEASE = "01900000-0000-7000-8000-00000000abcd";

function row(
  service: string,
  index: number,
  state: string,
  status: string,
  extra: { gated?: boolean; count?: number; ports?: ContainerRow["Ports"] } = {},
): ContainerRow {
  return {
    Id: `${service}${index}`.padEnd(64, "0"),
    Names: [`/fred-${LEASE}-${service}-${index}`],
    Image: "fred-test/httpd:1",
    ImageID: "sha256:x",
    Command: "",
    Created: 0,
    State: state,
    Status: status,
    Ports: extra.ports ?? [],
    Labels: {
      "fred.lease_uuid": LEASE,
      "fred.service_name": service,
      "fred.instance_index": String(index),
      "fred.operation_id": "6f1c1f3e-4d0a-4b7e-9a53-0f2d1c3b4a59",
      "fred.release": "1",
      "fred.health_gated": extra.gated ? "true" : "false",
      "fred.instance_count": String(extra.count ?? 1),
    },
    HostConfig: { NetworkMode: "n" },
    NetworkSettings: { Networks: {} },
    Mounts: [],
  } as ContainerRow;
}

describe("observing containers", () => {
  it("two releases side by side (an update): the one all up serves, else the newest, between", () => {
    const of = (r: ContainerRow, release: string): ContainerRow => ({
      ...r,
      Labels: { ...r.Labels, "fred.release": release },
    });
    const oldUp = of(row("web", 0, "running", "Up 1 minute"), "1");
    const oldStopped = of(row("web", 0, "exited", "Exited (143) 1 second ago"), "1");
    const nextCreated = of(row("web", 0, "created", "Created"), "2");
    const nextUp = of(row("web", 0, "running", "Up 1 second"), "2");
    const nextExited = of(row("web", 0, "exited", "Exited (3) 1 second ago"), "2");
    const serving = observeLease(LEASE, [oldUp, nextCreated]);
    assert.deepEqual([serving.state, serving.release], ["running", 1]);
    const moved = observeLease(LEASE, [oldStopped, nextUp]);
    assert.deepEqual([moved.state, moved.release], ["running", 2]);
    // Neither up (stopped beside a failed or not yet started next): between releases, never
    // "failed", so a crash inside an update is not reported as the workload's death.
    for (const next of [nextExited, nextCreated]) {
      const between = observeLease(LEASE, [oldStopped, next]);
      assert.deepEqual([between.state, between.release, between.reason], ["partial", 2, undefined]);
    }
    const info = connectionInfo(servingRows([oldStopped, nextUp]).rows, {
      hostAddress: "h",
      bindIp: "127.0.0.1",
      backendName: "b",
    });
    assert.equal(info.instances?.length, 1);
  });

  it("reads the instance phase from state and status text", () => {
    assert.equal(instancePhase(row("a", 0, "running", "Up 3 seconds")), "running");
    assert.equal(instancePhase(row("a", 0, "running", "Up 3 seconds (healthy)")), "running");
    assert.equal(instancePhase(row("a", 0, "running", "Up 3 seconds (health: starting)")), "starting");
    assert.equal(instancePhase(row("a", 0, "running", "Up 3 seconds (unhealthy)")), "unhealthy");
    assert.equal(instancePhase(row("a", 0, "exited", "Exited (3) 1 second ago")), "exited");
    assert.equal(instancePhase(row("a", 0, "created", "Created")), "created");
  });

  it("judges a lease running, partial or failed with curated reasons", () => {
    const up = observeLease(LEASE, [row("web", 0, "running", "Up 1 second")]);
    assert.equal(up.state, "running");
    assert.equal(up.operationId, "6f1c1f3e-4d0a-4b7e-9a53-0f2d1c3b4a59");
    assert.equal(up.release, 1);

    const exited = observeLease(LEASE, [row("web", 0, "exited", "Exited (3) 2 seconds ago")]);
    assert.equal(exited.state, "failed");
    assert.equal(exited.reason, "ContainerExited");
    assert.equal(exited.message, "service web instance 0 exited unexpectedly with code 3");

    const unhealthy = observeLease(LEASE, [row("web", 0, "running", "Up (unhealthy)", { gated: true })]);
    assert.equal(unhealthy.reason, "HealthCheckFailed");
    const imageHealth = observeLease(LEASE, [row("web", 0, "running", "Up (unhealthy)", { gated: false })]);
    assert.equal(imageHealth.state, "running", "an image HEALTHCHECK never decides");
    const starting = observeLease(LEASE, [
      row("web", 0, "running", "Up (health: starting)", { gated: true }),
    ]);
    assert.equal(starting.state, "partial");

    const creating = observeLease(LEASE, [row("web", 0, "created", "Created", { count: 2 })]);
    assert.equal(creating.state, "partial");
    const shortRunning = observeLease(LEASE, [row("web", 0, "running", "Up", { count: 2 })]);
    assert.equal(shortRunning.state, "failed", "a started lease missing a container has failed");
  });

  it("groups by lease in service and index order", () => {
    const other = row("z", 0, "running", "Up");
    other.Labels = { ...other.Labels, "fred.lease_uuid": "other" };
    const groups = groupByLease([
      row("web", 10, "running", "Up"),
      row("web", 2, "running", "Up"),
      row("db", 0, "running", "Up"),
      other,
    ]);
    assert.deepEqual(
      groups.get(LEASE)?.map((r) => `${r.Labels["fred.service_name"]}/${r.Labels["fred.instance_index"]}`),
      ["db/0", "web/2", "web/10"],
    );
    assert.equal(groups.get("other")?.length, 1);
  });

  it("serves /info ports as strings, preferring the configured bind address", () => {
    const r = row("web", 0, "running", "Up", {
      ports: [
        { IP: "::", PrivatePort: 8080, PublicPort: 49154, Type: "tcp" },
        { IP: "0.0.0.0", PrivatePort: 8080, PublicPort: 49153, Type: "tcp" },
        { IP: "", PrivatePort: 9000, Type: "tcp" } as never,
      ],
    });
    const info = connectionInfo([r], { hostAddress: "10.0.0.5", bindIp: "0.0.0.0", backendName: "docker" });
    assert.equal(info.host, "10.0.0.5");
    assert.deepEqual(info.ports, { "8080/tcp": { host_ip: "0.0.0.0", host_port: "49153" } });
    assert.equal((info.instances?.[0] as { container_id?: string } | undefined)?.container_id?.length, 12);
    assert.deepEqual(Object.keys(info.services ?? {}), ["web"]);
    const two = connectionInfo([row("db", 0, "running", "Up"), r], {
      hostAddress: "h",
      bindIp: "0.0.0.0",
      backendName: "docker",
    });
    assert.equal(two.ports, undefined);
    assert.equal(two.instances?.length, 2);
  });
});

describe("container logs", () => {
  const frame = (type: number, text: string) => {
    const body = Buffer.from(text);
    const head = Buffer.alloc(8);
    head[0] = type;
    head.writeUInt32BE(body.length, 4);
    return Buffer.concat([head, body]);
  };

  it("demultiplexes stdout and stderr frames in order", () => {
    const raw = Buffer.concat([frame(1, "out one\n"), frame(2, "err two\n"), frame(1, "out three\n")]);
    assert.equal(demuxLogStream(raw), "out one\nerr two\nout three\n");
    assert.equal(demuxLogStream(Buffer.from("plain tty text\n")), "plain tty text\n");
    assert.equal(demuxLogStream(Buffer.alloc(0)), "");
  });

  it("keeps the last lines", () => {
    assert.equal(lastLines("a\nb\nc\n", 2), "b\nc\n");
    assert.equal(lastLines("a\nb\nc", 1), "c");
  });

  it("enforces the aggregate budget across instances", () => {
    const out = applyLogBudget(
      [
        ["a/0", "x".repeat(60)],
        ["a/1", "y".repeat(60)],
        ["b/0", "z".repeat(10)],
      ],
      100,
    );
    assert.equal(out["a/0"], "x".repeat(60));
    assert.match(out["a/1"] ?? "", /truncated/);
    assert.ok((out["a/1"] ?? "").endsWith("y".repeat(40)));
    assert.doesNotMatch(out["b/0"] ?? "", /zz/);
    assert.match(out["b/0"] ?? "", /truncated/);
    const total = Object.values(out).reduce((n, t) => n + t.replace(/\[fred:[^\]]*\]\n/g, "").length, 0);
    assert.equal(total, 100);
  });
});
