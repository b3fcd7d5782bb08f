// The ACP scenarios: what the client does, and (for recording only) the
// model's side as a hand-written script. Replays take the model's side from
// the recorded session log instead.
import { type MockReply, reply } from '../../packages/test-support/llm-mock/src/index.ts'
import type { PermissionAnswer } from '../../apps/cli/tests/support/acp.ts'

export type Step =
  | { newSession: Record<string, never> }
  | { setMode: string }
  /** A prompt; `permissions` are the client's answers to the permission requests it raises, in order. */
  | { prompt: string; permissions?: PermissionAnswer[] }

export interface AcpScenario {
  /** The client offers fs/read_text_file and fs/write_text_file. */
  fs: boolean
  /** Files in the workspace before the run (relative path → text). */
  files?: Record<string, string>
  /** The editor's unsaved buffers (relative path → text), served by the client's fs methods. */
  buffers?: Record<string, string>
  steps: Step[]
}

export const SCENARIOS: Record<string, { scenario: AcpScenario; replies: () => MockReply[] }> = {
  // An editor with an unsaved buffer: a plan, a read through the client, an
  // edit approved under read-only mode and written back through the client.
  'editor-edit-with-approval': {
    scenario: {
      fs: true,
      files: { 'notes.md': '# Notes\n- buy milk\n' },
      buffers: { 'notes.md': '# Notes\n- buy milk\n- call mom\n' },
      steps: [
        { newSession: {} },
        { setMode: 'read-only' },
        { prompt: 'Add "walk the dog" to my notes.', permissions: ['allow_once'] },
      ],
    },
    replies: () => [
      reply.toolCalls(
        [
          {
            id: 'call_plan',
            name: 'todo_write',
            arguments: {
              todos: [
                { content: 'Read the notes', status: 'in_progress' },
                { content: 'Add the item', status: 'pending' },
              ],
            },
          },
        ],
        { reasoning: 'Plan, then read the file before editing it.' },
      ),
      reply.toolCalls([{ id: 'call_read', name: 'read', arguments: { file_path: 'notes.md' } }]),
      reply.toolCalls(
        [
          {
            id: 'call_edit',
            name: 'edit',
            arguments: {
              file_path: 'notes.md',
              old_string: '- call mom\n',
              new_string: '- call mom\n- walk the dog\n',
            },
          },
        ],
        {
          content: 'The list ends with "call mom"; adding the new item after it.',
        },
      ),
      reply.text('Added "walk the dog" to notes.md.'),
    ],
  },
}
