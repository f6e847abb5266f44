/**
 * Restart and update: the durable maintenance journal (in the placement store), the
 * service that admits and dispatches commands, and the completion rules that settle them.
 */
export { maintenanceRefusal } from "./answers.ts";
export { ANSWERS, type Command, type Completion, completeMaintenance, promote } from "./completion.ts";
export {
  type CommandKind,
  DEFAULT_LIMITS,
  type Limits,
  MaintenanceJournal,
  type Outcome,
  type Phase,
  sameCommand,
} from "./journal.ts";
export { type Accepted, type CommandRequest, Maintenance, type MaintenanceOptions } from "./service.ts";
