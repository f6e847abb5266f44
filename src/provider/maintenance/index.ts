/**
 * Restart and update, store side: the durable maintenance journal (in the placement
 * store) and the completion rules that settle its commands. The tenant side (admission,
 * dispatch, answers) is the tenant API's (src/provider/api/maintenance).
 */

export { formatAdmittedAt } from "./admitted-at.ts";
export { ANSWERS, type Command, type Completion, completeMaintenance, promote } from "./completion.ts";
export {
  type CommandKind,
  DEFAULT_LIMITS,
  type Limits,
  MaintenanceJournal,
  type Outcome,
  type Phase,
  type StoredAnswer,
  sameCommand,
} from "./journal.ts";
