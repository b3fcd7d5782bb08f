export { eventUsage } from './usage.ts'
export { costOf, type ModelLookup, meterUsage } from './meter.ts'
