export { type UsageMetricsOptions, UsageMetricsPoll } from "./poll.ts";
export { DEFAULT_MAX_USAGE_SERIES, LeaseUsageSeries } from "./series.ts";
