import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { shoalBin } from '../helpers/processes.ts'

const run = promisify(execFile)

describe('the scheduler config of a controller', () => {
  it('is refused at start with one clear line naming the bad fields', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shoal-config-'))
    const file = join(dir, 'scheduler.yaml')
    await writeFile(
      file,
      'filters:\n  - name: PodFitsResources\nscores:\n  - name: AvailabilityZonePriority\n    weight: -1\n'
    )
    const args = [
      shoalBin,
      'controller',
      '--kafka',
      brokers().join(','),
      '--port',
      '0',
      '--prefix',
      uniqueName('config'),
      '--scheduler-config',
      file
    ]
    const failed = await run(process.execPath, args, { timeout: 60_000 }).then(
      () => assert.fail('the controller started with a bad config'),
      (error: { code: number; stderr: string }) => error
    )
    assert.equal(failed.code, 1)
    assert.match(failed.stderr, /scheduler config .* is invalid: .*scores\[0\]\.weight/)
    assert.equal(failed.stderr.trim().split('\n').length, 1, failed.stderr)
  })
})
