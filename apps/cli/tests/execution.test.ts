import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { type RecordedRequest, reply } from '@dsh/llm-mock'
import { runDsh } from '@dsh/testkit'
import { describe, expect, it } from 'vitest'
import { toolTexts, useMockedHeadless } from './support/mocked-headless.ts'

const t = useMockedHeadless()

const lastToolText = (request: RecordedRequest) => toolTexts(request).at(-1) ?? ''

describe('execution tools through headless', () => {
  it('greps, reads and edits a file', async () => {
    writeFileSync(path.join(t.work, 'app.js'), 'const a = 1\n// TODO: rename b\nconst b = 2\n')
    writeFileSync(path.join(t.work, 'notes.md'), 'nothing to do here\n')
    t.mock.enqueue(
      reply.toolCalls([{ name: 'grep', arguments: { pattern: 'TODO' } }]),
      reply.toolCalls([{ name: 'read', arguments: { file_path: 'app.js' } }]),
      reply.toolCalls([
        {
          name: 'edit',
          arguments: { file_path: 'app.js', old_string: 'const b = 2', new_string: 'const renamed = 2' },
        },
      ]),
      reply.text('Renamed b.'),
    )
    const result = await t.headless(['rename the TODO variable'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/app\.js[\s\S]*TODO: rename b/)
    expect(toolTexts(t.mock.requests[1])[0]).not.toMatch(/notes\.md/)
    expect(readFileSync(path.join(t.work, 'app.js'), 'utf8')).toBe(
      'const a = 1\n// TODO: rename b\nconst renamed = 2\n',
    )
  })

  it('starts a background job and polls it to completion', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: 'sleep 0.3; echo background-finished > done.txt; echo all done',
            run_in_background: true,
          },
        },
      ]),
    )
    let jobId = ''
    // Poll like a model would: job_output until the job is no longer running, then answer.
    t.mock.setFallback((request) => {
      const text = lastToolText(request)
      jobId ||= /started background job (\S+):/.exec(text)?.[1] ?? ''
      if (/status: running|started background job/.test(text))
        return reply.toolCalls([{ name: 'job_output', arguments: { job_id: jobId, wait: true, timeout_ms: 2000 } }])
      return reply.text('The job finished.')
    })
    const result = await t.headless(['run it in the background'])
    t.mock.setFallback()
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('The job finished.\n')
    const polled = t.mock.requests.map((r) => lastToolText(r)).join('\n')
    expect(polled).toMatch(/all done/)
    expect(lastToolText(t.mock.requests.at(-1) as RecordedRequest)).not.toMatch(/status: running/)
    expect(readFileSync(path.join(t.work, 'done.txt'), 'utf8')).toBe('background-finished\n')
  })

  it('drives an interactive program through a terminal', async () => {
    let id = ''
    t.mock.enqueue(
      reply.toolCalls([{ name: 'terminal_open', arguments: { type: 'shell', name: 'python' } }]),
      (request) => {
        id = /\[terminal (\S+) "python" started/.exec(lastToolText(request))?.[1] ?? 'missing-id'
        return reply.toolCalls([
          {
            name: 'terminal_send',
            arguments: { sessionId: id, text: `python3 -c "name = input('name? '); print('hello', name)"` },
          },
        ])
      },
      () => reply.toolCalls([{ name: 'terminal_send', arguments: { sessionId: id, text: 'dsh' } }]),
      reply.text('It greeted dsh.'),
    )
    const result = await t.headless(['--permission', 'danger-full-access', 'talk to the program'])
    expect(result.code).toBe(0)
    expect(lastToolText(t.mock.requests[2] as RecordedRequest)).toMatch(/name\?/)
    expect(lastToolText(t.mock.requests[3] as RecordedRequest)).toMatch(/hello dsh/)
  })

  it('refuses a write outside the workspace under workspace-write (headless cannot ask)', async () => {
    // Outside the workspace and outside the temp dir (which workspace-write may also write).
    const target = path.join('/var/tmp', `dsh-outside-${path.basename(t.root)}.txt`)
    t.mock.enqueue(
      reply.toolCalls([{ name: 'write', arguments: { file_path: target, content: 'escaped' } }]),
      reply.text('I could not write there.'),
    )
    const result = await t.headless(['write outside'])
    expect(result.code).toBe(0)
    expect(existsSync(target)).toBe(false)
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/denied|not allowed|outside/i)
  })

  it('denies an escalated command in headless with ask', async () => {
    t.mock.enqueue(
      reply.toolCalls([
        {
          name: 'bash',
          arguments: {
            description: 'Run a command',
            command: 'touch /tmp/dsh-escalated-marker',
            escalate: true,
            justification: 'needs the real /tmp',
          },
        },
      ]),
      reply.text('Denied.'),
    )
    // The seeds' bash has no escalate parameter; a deployment that wants it turns it on.
    const patch = path.join(t.root, 'escalation.yml')
    writeFileSync(patch, '- id: tool-bash\n  config:\n    allowEscalation: true\n')
    const result = await runDsh(['--profile', 'headless', '--patch', patch, '--approval', 'ask', 'escalate'], {
      home: t.home,
      cwd: t.work,
      env: t.env(),
    })
    expect(result.code).toBe(0)
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/denied|approv/i)
    expect(existsSync('/tmp/dsh-escalated-marker')).toBe(false)
  })

  it('read-only confines bash in bwrap: a write fails and nothing is created', async () => {
    t.mock.enqueue(
      reply.toolCalls([{ name: 'bash', arguments: { description: 'Run a command', command: 'echo hi > made.txt' } }]),
      reply.text('Could not write.'),
    )
    const result = await t.headless(['--permission', 'read-only', 'try to write'])
    expect(result.code).toBe(0)
    expect(existsSync(path.join(t.work, 'made.txt'))).toBe(false)
    expect(toolTexts(t.mock.requests[1])[0]).toMatch(/Read-only file system/)
  })
})
