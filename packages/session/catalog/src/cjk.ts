/**
 * Chinese, Japanese and Korean text has no spaces between words, and FTS5's
 * `unicode61` tokenizer keeps a whole run of such characters as one token,
 * so a word inside a sentence could not be found. The catalog indexes each
 * of these characters as a token of its own, separated by a zero-width space
 * (a separator to the tokenizer, invisible in a snippet), and searches a
 * word of them as a phrase: its characters, in order.
 */
const CJK_CLASS = '[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}]'
const CJK = new RegExp(CJK_CLASS, 'u')
const CJK_CHAR = new RegExp(CJK_CLASS, 'gu')
const ZWSP = '\u200b'

/** `text` with a zero-width space around each CJK character (unchanged when it has none). */
export function separateCjk(text: string): string {
  return CJK.test(text) ? text.replace(CJK_CHAR, `${ZWSP}$&${ZWSP}`) : text
}

/**
 * A snippet as the user wrote the text: without the zero-width spaces, and
 * with the highlights of consecutive characters joined into one.
 */
export function joinCjk(snippet: string, open: string, close: string): string {
  if (!snippet.includes(ZWSP)) return snippet
  let text = snippet.replaceAll(ZWSP, '')
  if (open && close) {
    const pair = close + open
    for (let at = text.indexOf(pair); at !== -1; at = text.indexOf(pair, at)) {
      if (CJK.test(text[at - 1] ?? '') && CJK.test(text[at + pair.length] ?? ''))
        text = text.slice(0, at) + text.slice(at + pair.length)
      else at += pair.length
    }
  }
  return text
}
