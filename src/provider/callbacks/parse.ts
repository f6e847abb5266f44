/**
 * providerd's reading of an inbound callback: the URL capability and the body's field
 * rules are the backend contract's (src/core/backend-contract), shared with the kit.
 */
export {
  type ParsedCallback,
  parseCallbackBody,
  parseCapability,
} from "../../core/backend-contract/index.ts";
