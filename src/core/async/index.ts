export {
  Backoff,
  type BackoffPolicy,
  isRetryable,
  type RetryOptions,
  retry,
  sleepOrAbort,
} from "./backoff.ts";
export { withDeadline, withStallDeadline } from "./deadline.ts";
export { definedOnly } from "./defined-only.ts";
export { Admission, type BucketVerdict, Coalescer, KeyedMutex, RateBuckets } from "./keyed.ts";
export { type ReleaseErrorReporter, ReleaseStack } from "./release-stack.ts";
