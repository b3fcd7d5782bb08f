import type { ConnectionTest, ModelDiscovery, Settings, SettingsUpdate, Theme } from '@dsh/web-client'
import { type FormEvent, useEffect, useState } from 'react'
import { useApp } from '../../hooks/app-context.ts'
import { useStore } from '../../lib/store.ts'
import { applyTheme } from '../../theme/theme.ts'
import { Button } from '../common/Button.tsx'
import { SidebarToggle } from '../common/SidebarToggle.tsx'
import { Field } from './Field.tsx'
import styles from './SettingsPage.module.css'

const THEMES: Theme[] = ['light', 'dark', 'system']

/** The two rule lists the page edits, one textarea each. */
const RULE_FIELDS = [
  {
    kind: 'allow',
    label: 'Allow rules',
    hint: 'One per line; matching calls run without asking where the preset would ask, e.g. bash(npm test*), mcp__github__*, web_fetch(domain:docs.python.org).',
  },
  {
    kind: 'deny',
    label: 'Deny rules',
    hint: 'One per line; matching calls never run, under every preset, e.g. bash(git push*).',
  },
] as const

/** Provider key and URL, model, reasoning effort, permission preset and theme. The key is write-only. */
export function SettingsPage() {
  const app = useApp()
  const settings = useStore(app.settings)
  const info = useStore(app.info)
  const [form, setForm] = useState<Omit<Settings, 'hasKey' | 'provider'>>()
  const [apiKey, setApiKey] = useState('')
  const [saving, setSaving] = useState(false)
  const [status, setStatus] = useState<{ tone: 'ok' | 'error'; text: string }>()
  const [test, setTest] = useState<ConnectionTest | 'testing'>()
  const [compatUrl, setCompatUrl] = useState<string>()
  const [compatKey, setCompatKey] = useState('')
  const [compatModel, setCompatModel] = useState('')
  const [discovery, setDiscovery] = useState<ModelDiscovery | 'testing'>()
  const [ruleText, setRuleText] = useState<{ allow: string; deny: string }>()

  useEffect(() => {
    if (settings && !form) setForm({ ...settings })
    if (settings && !ruleText)
      setRuleText({ allow: settings.rules.settings.allow.join('\n'), deny: settings.rules.settings.deny.join('\n') })
  }, [settings, form, ruleText])

  if (!settings || !form || !ruleText) return <div className={styles.page} aria-busy="true" />

  const save = async (event: FormEvent) => {
    event.preventDefault()
    setSaving(true)
    setStatus(undefined)
    const update: SettingsUpdate = {
      model: form.model,
      permissionPreset: form.permissionPreset,
      ...(form.network ? { network: form.network } : {}),
      theme: form.theme,
      baseUrl: form.baseUrl ?? '',
      ...(form.reasoningEffort ? { reasoningEffort: form.reasoningEffort } : {}),
      ...(apiKey.trim() ? { apiKey: apiKey.trim() } : {}),
      allowRules: ruleLines(ruleText.allow),
      denyRules: ruleLines(ruleText.deny),
    }
    try {
      await app.settings.save(update)
      setApiKey('')
      setStatus({ tone: 'ok', text: 'Settings saved' })
    } catch (e) {
      setStatus({ tone: 'error', text: e instanceof Error ? e.message : String(e) })
    } finally {
      setSaving(false)
    }
  }

  const testConnection = async () => {
    setTest('testing')
    try {
      setTest(await app.settings.test())
    } catch (e) {
      setTest({ ok: false, error: { code: 'network', message: e instanceof Error ? e.message : String(e) } })
    }
  }

  const serverUrl = compatUrl ?? settings.compatible.baseUrl ?? ''
  /** The server's address and key as typed; the key field empties once it is stored. */
  const saveServer = async (extra: SettingsUpdate = {}) => {
    const saved = await app.settings.save({
      ...(serverUrl.trim() ? { compatibleBaseUrl: serverUrl.trim() } : {}),
      ...(compatKey.trim() ? { compatibleApiKey: compatKey.trim() } : {}),
      ...extra,
    })
    setCompatKey('')
    return saved
  }

  const testServer = async () => {
    setDiscovery('testing')
    try {
      await saveServer()
      const result = await app.settings.discoverModels()
      setDiscovery(result)
      if (result.ok && !result.models.includes(compatModel)) setCompatModel(result.models[0] ?? '')
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e)
      setDiscovery({ ok: false, route: 'openai-compatible', error: { code: 'network', message } })
    }
  }

  const chooseServer = async () => {
    setStatus(undefined)
    try {
      const saved = await saveServer({ provider: 'openai-compatible', model: compatModel.trim() })
      setForm({ ...form, model: saved.model })
      setStatus({ tone: 'ok', text: `New sessions use ${saved.model} on the OpenAI-compatible server` })
    } catch (e) {
      setStatus({ tone: 'error', text: e instanceof Error ? e.message : String(e) })
    }
  }

  const chooseTheme = (theme: Theme) => {
    setForm({ ...form, theme })
    applyTheme(theme)
    app.settings.save({ theme }).catch((e: unknown) => app.toasts.error(e, 'Saving the theme'))
  }

  const models = withCurrent(info?.models ?? [], form.model)
  return (
    <div className={styles.page}>
      <header className={styles.header}>
        <SidebarToggle />
        <h1 className={styles.title}>Settings</h1>
      </header>
      <form className={styles.form} onSubmit={save}>
        <section className={styles.section} aria-labelledby="provider-heading">
          <h2 id="provider-heading" className={styles.heading}>
            Model provider ({settings.provider}){' '}
            <span className={settings.hasKey ? styles.badgeOk : styles.badgeMissing} data-testid="key-state">
              {settings.hasKey ? 'Key set' : 'No key'}
            </span>
          </h2>
          <Field label="API key" hint={keyHint(settings)}>
            <input
              type="password"
              autoComplete="off"
              value={apiKey}
              placeholder={settings.hasKey ? '•••••••• (stored)' : 'sk-…'}
              onChange={(e) => setApiKey(e.target.value)}
            />
          </Field>
          <Field label="Base URL" hint="Leave empty for the provider's default.">
            <input
              type="url"
              value={form.baseUrl ?? ''}
              placeholder="https://api.deepseek.com"
              onChange={(e) => setForm({ ...form, baseUrl: e.target.value })}
            />
          </Field>
          <div className={styles.row}>
            <Button onClick={() => void testConnection()} disabled={test === 'testing'}>
              {test === 'testing' ? 'Testing…' : 'Test connection'}
            </Button>
            {test && test !== 'testing' ? (
              <span role="status" className={test.ok ? styles.ok : styles.error}>
                {test.ok ? `Connected (${test.model} answered)` : `${test.error.code}: ${test.error.message}`}
              </span>
            ) : null}
          </div>
        </section>
        {settings.routes.includes('openai-compatible') ? (
          <section className={styles.section} aria-labelledby="compatible-heading">
            <h2 id="compatible-heading" className={styles.heading}>
              OpenAI-compatible server{' '}
              <span
                className={settings.compatible.hasKey ? styles.badgeOk : styles.badgeMissing}
                data-testid="server-key-state"
              >
                {settings.compatible.hasKey ? 'Key set' : 'No key'}
              </span>
            </h2>
            <Field
              label="Server URL"
              hint="vLLM, Ollama, LM Studio, OpenRouter…: the URL that ends before /chat/completions."
            >
              <input
                type="url"
                value={serverUrl}
                placeholder="http://127.0.0.1:11434/v1"
                onChange={(e) => setCompatUrl(e.target.value)}
              />
            </Field>
            <Field
              label="Server key"
              hint="Optional for local servers. Stored 0600 in the dsh home, never shown again."
            >
              <input
                type="password"
                autoComplete="off"
                value={compatKey}
                placeholder={settings.compatible.hasKey ? '•••••••• (stored)' : 'none'}
                onChange={(e) => setCompatKey(e.target.value)}
              />
            </Field>
            <div className={styles.row}>
              <Button onClick={() => void testServer()} disabled={discovery === 'testing' || !serverUrl.trim()}>
                {discovery === 'testing' ? 'Testing…' : 'Test server connection'}
              </Button>
              {discovery && discovery !== 'testing' ? (
                <span role="status" className={discovery.ok ? styles.ok : styles.error}>
                  {discovery.ok
                    ? `Connected: ${discovery.models.length} model(s) listed`
                    : `${discovery.error.code}: ${discovery.error.message}`}
                </span>
              ) : null}
            </div>
            <Field label="Server model" hint="Listed by the server once the connection test passes; or type its id.">
              <input
                list="server-models"
                value={compatModel}
                onChange={(e) => setCompatModel(e.target.value)}
                placeholder="model id"
              />
            </Field>
            <datalist id="server-models" data-testid="server-models">
              {(discovery && discovery !== 'testing' && discovery.ok ? discovery.models : []).map((m) => (
                <option key={m} value={m} />
              ))}
            </datalist>
            <div className={styles.row}>
              <Button onClick={() => void chooseServer()} disabled={!compatModel.trim() || !serverUrl.trim()}>
                Use this server for new sessions
              </Button>
            </div>
          </section>
        ) : null}
        <section className={styles.section} aria-labelledby="model-heading">
          <h2 id="model-heading" className={styles.heading}>
            Defaults for new sessions
          </h2>
          <Field label="Model">
            <select value={form.model} onChange={(e) => setForm({ ...form, model: e.target.value })}>
              {models.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </Field>
          <Field label="Reasoning effort">
            <select
              value={form.reasoningEffort ?? ''}
              onChange={(e) => setForm({ ...form, reasoningEffort: e.target.value || undefined })}
            >
              <option value="">model default</option>
              {(info?.reasoningEfforts ?? []).map((effort) => (
                <option key={effort}>{effort}</option>
              ))}
            </select>
          </Field>
          <Field label="Permission preset" hint="What tools may do without asking you.">
            <select
              value={form.permissionPreset}
              onChange={(e) => setForm({ ...form, permissionPreset: e.target.value })}
            >
              {withCurrent(info?.presets ?? [], form.permissionPreset).map((preset) => (
                <option key={preset}>{preset}</option>
              ))}
            </select>
          </Field>
          <Field
            label="Network of commands"
            hint="off: none. proxy: package registries and GitHub; other hosts are asked about. on: outbound, never this machine's own services."
          >
            <select
              value={form.network ?? ''}
              onChange={(e) => setForm({ ...form, ...(e.target.value ? { network: e.target.value } : {}) })}
            >
              {form.network ? null : <option value="">the preset's default</option>}
              {form.networks.map((network) => (
                <option key={network}>{network}</option>
              ))}
            </select>
          </Field>
        </section>
        <section className={styles.section} aria-labelledby="rules-heading">
          <h2 id="rules-heading" className={styles.heading}>
            Allow and deny rules
          </h2>
          {RULE_FIELDS.map(({ kind, label, hint }) => (
            <Field key={kind} label={label} hint={hint}>
              <textarea
                rows={3}
                spellCheck={false}
                value={ruleText[kind]}
                onChange={(e) => setRuleText({ ...ruleText, [kind]: e.target.value })}
              />
            </Field>
          ))}
          {settings.rules.config.allow.length || settings.rules.config.deny.length ? (
            <div data-testid="config-rules">
              From the profile config (edit its patch file):
              <ul>
                {settings.rules.config.allow.map((rule) => (
                  <li key={`allow:${rule}`}>allow {rule}</li>
                ))}
                {settings.rules.config.deny.map((rule) => (
                  <li key={`deny:${rule}`}>deny {rule}</li>
                ))}
              </ul>
            </div>
          ) : null}
        </section>
        <section className={styles.section} aria-labelledby="theme-heading">
          <h2 id="theme-heading" className={styles.heading}>
            Appearance
          </h2>
          <div role="radiogroup" aria-labelledby="theme-heading" className={styles.themes}>
            {THEMES.map((theme) => (
              <label key={theme} className={styles.theme}>
                <input
                  type="radio"
                  name="theme"
                  value={theme}
                  checked={form.theme === theme}
                  onChange={() => chooseTheme(theme)}
                />
                {theme[0]?.toUpperCase() + theme.slice(1)}
              </label>
            ))}
          </div>
        </section>
        <div className={styles.row}>
          <Button type="submit" variant="primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save'}
          </Button>
          {status ? (
            <span role="status" className={status.tone === 'ok' ? styles.ok : styles.error}>
              {status.text}
            </span>
          ) : null}
        </div>
      </form>
    </div>
  )
}

function keyHint({ hasKey, keySource }: Settings): string {
  if (keySource === 'env') return 'In use: DEEPSEEK_API_KEY from the environment, which wins over a key saved here.'
  if (keySource === 'env-file')
    return 'In use: the key in the home .env file. A key saved here is stored 0600 in the home.'
  if (hasKey) return 'A key is stored. Type a new one to replace it; it is never shown again.'
  return 'No key yet. It is stored 0600 in the dsh home and never shown again.'
}

function ruleLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
}

function withCurrent(list: readonly string[], current: string): string[] {
  return list.includes(current) || !current ? [...list] : [current, ...list]
}
