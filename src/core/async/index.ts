export { definedOnly } from "./defined-only.ts";
export { Admission, type BucketVerdict, Coalescer, KeyedMutex, RateBuckets } from "./keyed.ts";
export { PeriodicPass } from "./periodic-pass.ts";
export { type ReleaseErrorReporter, ReleaseStack } from "./release-stack.ts";
export {
  Backoff,
  type BackoffPolicy,
  isRetryable,
  type RetryOptions,
  retry,
  sleepOrAbort,
  withDeadline,
  withStallDeadline,
} from "./timing.ts";
