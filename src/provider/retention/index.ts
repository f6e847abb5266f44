export { holdBoth } from "./claims.ts";
export { type RestoreOutcome, type RestoreRequest, Restorer } from "./restore.ts";
export { type RetainedFields, type RetainedItem, retainedFields } from "./retained-fields.ts";
