export { type AddressClass, classifyAddress, isPublicAddress, nonPublicReason } from './classify.ts'
export { OUTSIDE_GLOBAL_UNICAST, RANGE_RULES } from './ranges.ts'
export { hostAllowed } from './hosts.ts'
