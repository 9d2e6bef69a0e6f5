import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import { http } from '../helpers/http.ts'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { captureOutput, shoalBin } from '../helpers/processes.ts'
import { eventually } from '../helpers/wait.ts'

// `shoal up --prefix P` without a pool: its three dispatchers keep their state under the same prefix as its controller,
// so the controller sees them (before, they used the default prefix and nothing was ever placed on them).
describe('shoal up --prefix', () => {
  it('starts dispatchers the controller sees, under the same prefix', async () => {
    const prefix = uniqueName('up-prefix')
    const up = spawn(
      process.execPath,
      [shoalBin, 'up', '--kafka', brokers().join(','), '--port', '0', '--prefix', prefix, '--no-demo'],
      { env: { ...process.env, SHOAL_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] }
    )
    const output = captureOutput(up)
    try {
      const url = await eventually(
        async () => {
          if (up.exitCode !== null) throw new Error(`shoal up exited with ${up.exitCode}: ${output.stderr}`)
          return output.lines.map(l => /^\s+API\s+(\S+)/.exec(l)?.[1]).find(u => u !== undefined)
        },
        90_000,
        'shoal up serving its API'
      )
      const names = await eventually(
        async () => {
          const answer = await http('GET', `${url}/apis/shoal.dev/v1alpha1/dispatchers`)
          const items = (answer.body as { items?: { metadata: { name: string } }[] }).items ?? []
          return items.length === 3 ? items.map(i => i.metadata.name).sort() : undefined
        },
        60_000,
        'three dispatchers seen by the controller'
      )
      assert.deepEqual(names, ['dispatcher-0', 'dispatcher-1', 'dispatcher-2'])
    } finally {
      up.kill('SIGTERM')
      await output.exited
    }
  })
})
