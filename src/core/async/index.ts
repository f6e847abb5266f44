export { Admission } from "./admission.ts";
export {
  Backoff,
  type BackoffPolicy,
  isRetryable,
  type RetryOptions,
  retry,
  sleepOrAbort,
} from "./backoff.ts";
export { Coalescer } from "./coalesce.ts";
export { withDeadline, withStallDeadline } from "./deadline.ts";
export { definedOnly } from "./defined-only.ts";
export { KeyedMutex } from "./keyed-mutex.ts";
export { type BucketVerdict, RateBuckets } from "./rate-buckets.ts";
export { type ReleaseErrorReporter, ReleaseStack } from "./release-stack.ts";
