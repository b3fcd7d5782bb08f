export { launch, type LaunchOptions } from './main.ts'
export { parseLauncherArgs, checkProfileName, UsageError, type LaunchRequest } from './args.ts'
export { TEMPLATES, openProfile, initProfile, type Profile } from './profile.ts'
export type { ProfileContext } from './profile-context.ts'
