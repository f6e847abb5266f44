/**
 * Restart and update in providerd: the service (admission into the journal, dispatch to
 * the backend, the recovery pass), the durable maintenance journal (in the placement
 * store) and the completion rules that settle its commands. What a tenant reads (the
 * routes and the wording of each refusal) is the tenant API's
 * (src/provider/api/routes/{maintenance,update}.ts, api/maintenance-answers.ts).
 */

export { ANSWERS, type Command, type Completion, completeMaintenance, promote } from "./completion.ts";
export {
  type CommandKind,
  DEFAULT_LIMITS,
  formatAdmittedAt,
  type Limits,
  MaintenanceJournal,
  type Outcome,
  type Phase,
  type StoredAnswer,
  sameCommand,
} from "./journal.ts";
export { backendRefusalAnswer, invalidStateFor, MaintenanceRefused, type Refusal } from "./refusal.ts";
export {
  type Accepted,
  type CommandRequest,
  Maintenance,
  type MaintenanceEvents,
  type MaintenanceOptions,
  progressStatus,
} from "./service.ts";
