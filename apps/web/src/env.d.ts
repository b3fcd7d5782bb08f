/// <reference types="vite/client" />

declare module 'highlight.js/lib/languages/*' {
  const language: import('highlight.js').LanguageFn
  export default language
}
