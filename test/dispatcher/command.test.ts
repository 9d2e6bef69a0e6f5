import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { brokers, uniqueName } from '../helpers/kafka.ts'
import { TEST_BUCKETS, TEST_LIVENESS_MS, memberWhere, testFollower } from './helpers.ts'

const main = fileURLToPath(new URL('./fixtures/dispatcher-main.ts', import.meta.url))

interface DispatcherProcess {
  readonly child: ChildProcess
  readonly exited: Promise<number | null>
  stderr(): string
}

function spawnDispatcher(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {}
): { child: ChildProcess; exited: Promise<number | null>; stderr(): string; stdout(): string } {
  const child = spawn(process.execPath, [main, ...args], {
    env: { ...process.env, SHOAL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  let stdout = ''
  child.stderr.on('data', chunk => (stderr += String(chunk)))
  child.stdout.on('data', chunk => (stdout += String(chunk)))
  const exited = once(child, 'exit').then(([code]) => code as number | null)
  return { child, exited, stderr: () => stderr, stdout: () => stdout }
}

/** Starts `shoal dispatcher` and waits for its `up` line. */
async function startDispatcherProcess(
  prefix: string,
  id: string,
  extra: readonly string[] = []
): Promise<DispatcherProcess> {
  const started = spawnDispatcher([
    '--kafka',
    brokers().join(','),
    '--prefix',
    prefix,
    '--buckets',
    String(TEST_BUCKETS),
    '--id',
    id,
    '--zone',
    'zone-a',
    '--node',
    'node-1',
    '--capacity',
    '10',
    '--liveness-timeout',
    `${TEST_LIVENESS_MS}ms`,
    ...extra
  ])
  const lines = createInterface({ input: started.child.stdout! })
  const up = new Promise<string>((resolve, reject) => {
    lines.on('line', line => {
      if (line.includes(' up')) resolve(line)
    })
    void started.exited.then(code => reject(new Error(`dispatcher exited with ${code}: ${started.stderr()}`)))
  })
  const timeout = AbortSignal.timeout(60_000)
  const line = await Promise.race([
    up,
    once(timeout, 'abort').then(() => {
      throw new Error(`dispatcher not up in 60 s: ${started.stderr()}`)
    })
  ])
  assert.equal(line, `Shoal dispatcher ${id} (zone zone-a, node node-1) up`)
  return started
}

describe('shoal dispatcher', () => {
  const processes: ChildProcess[] = []
  after(() => {
    for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })

  it('is declared dead after the liveness timeout when killed, and gone at once when stopped', async () => {
    const prefix = uniqueName('cmd')
    const [killed, stopped] = await Promise.all([
      startDispatcherProcess(prefix, 'dispatcher-0'),
      startDispatcherProcess(prefix, 'dispatcher-1')
    ])
    processes.push(killed.child, stopped.child)
    const follower = await testFollower(prefix)
    try {
      assert.deepEqual(
        follower.liveDispatchers().map(m => m.id),
        ['dispatcher-0', 'dispatcher-1']
      )

      stopped.child.kill('SIGTERM')
      assert.equal(await stopped.exited, 0)
      await follower.barrier()
      assert.equal(follower.view.member('dispatcher-1'), undefined)

      killed.child.kill('SIGKILL')
      await killed.exited
      await memberWhere(follower, 'dispatcher-0', m => m?.state === 'dead', 'the killed dispatcher declared dead')
      assert.deepEqual(follower.liveDispatchers(), [])
    } finally {
      await follower.close()
    }
  })

  it('exits 1 when a newer process starts with its id', async () => {
    const prefix = uniqueName('cmd-twins')
    const older = await startDispatcherProcess(prefix, 'dispatcher-2')
    processes.push(older.child)
    const newer = await startDispatcherProcess(prefix, 'dispatcher-2')
    processes.push(newer.child)
    assert.equal(await older.exited, 1)
    assert.match(older.stderr(), /another process started as dispatcher-2 \(incarnation \d+ > \d+\); stopped/)
    assert.equal(newer.child.exitCode, null)
    newer.child.kill('SIGINT')
    assert.equal(await newer.exited, 0)
  })

  it('names a wrong argument in one line and exits 2', async () => {
    const started = spawnDispatcher([
      '--kafka',
      brokers().join(','),
      '--id',
      'dispatcher-1',
      '--zone',
      'a',
      '--node',
      'n',
      '--capacity',
      'x'
    ])
    assert.equal(await started.exited, 2)
    assert.equal(started.stderr(), 'shoal dispatcher: --capacity must be an integer >= 0, not "x"\n')
    const missing = spawnDispatcher(['--kafka', brokers().join(','), '--capacity', '1'], {
      POD_NAME: '',
      HOSTNAME: 'laptop',
      SHOAL_ZONE: ''
    })
    assert.equal(await missing.exited, 2)
    assert.match(missing.stderr(), /^shoal dispatcher: --id is required/)
  })
})
