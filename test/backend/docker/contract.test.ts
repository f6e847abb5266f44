import { dockerSkip } from "../../support/docker.ts";
import { runBackendContractSuite } from "../contract.ts";
import {
  httpdManifest,
  manifest,
  PREVIOUS_SECRET,
  prepareDockerBackend,
  SECRET,
  SKU,
  startInProcess,
} from "./helpers.ts";

/** The backend-kit contract suite against the Docker backend on the real engine. */
const skip = await dockerSkip({ btrfs: true, images: ["httpd"] });

if (!skip) {
  runBackendContractSuite("docker", async () => {
    const setup = prepareDockerBackend();
    const running = await startInProcess(setup);
    return {
      baseUrl: running.url,
      storageId: running.storageId,
      secret: SECRET,
      previousSecret: PREVIOUS_SECRET,
      name: "docker-test",
      sku: SKU,
      overCapacityQuantity: 1000,
      maintenance: true,
      payload: (service) => httpdManifest(service),
      disallowedImagePayload: (service) => manifest({ [service]: { image: "quay.io/evil/image:1" } }),
      provisionTimeoutMs: 60_000,
      close: async () => {
        await running.close();
        await setup.cleanup();
      },
    };
  });
}
