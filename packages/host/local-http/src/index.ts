export { inSshSession, openInBrowser } from './browser.ts'
export { HttpError, parseJson, parseWith } from './http.ts'
export {
  type ApiRequest,
  JsonReply,
  type LocalHttpOptions,
  LocalHttpServer,
  type RouteHandler,
  type UpgradeHandler,
} from './server.ts'
export { checkTrust, isLoopback, parseAuthority, type TrustPolicy, trustPolicy } from './trust.ts'
