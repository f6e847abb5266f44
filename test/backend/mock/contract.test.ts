import { runBackendContractSuite } from "../contract.ts";
import { manifest, PREVIOUS_SECRET, SECRET, SKU, startTestMock } from "./helpers.ts";

runBackendContractSuite("mock", async () => {
  const running = await startTestMock();
  return {
    baseUrl: running.url,
    storageId: running.storageId,
    secret: SECRET,
    previousSecret: PREVIOUS_SECRET,
    name: "mock-test",
    sku: SKU,
    overCapacityQuantity: 200,
    maintenance: true,
    payload: (service) => manifest(service),
    disallowedImagePayload: (service) => manifest(service, "quay.io/evil/image:1"),
    close: () => running.close(),
  };
});
