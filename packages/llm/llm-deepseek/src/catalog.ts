/** The shipped model catalog and prices, without the adapter (no HTTP client loaded): for readers of stored logs. */
export { DEEPSEEK_PRICES, DEFAULT_MODELS, shippedModelInfo } from './config.ts'
