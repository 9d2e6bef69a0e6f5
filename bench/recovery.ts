// Recovery in seconds (issue 25): every fault the network lab makes, in every zone it can hit, each in a lab of its
// own (`npm run test:lab`, docs/faults.md "Across hosts: the network lab"), and one table of how long users waited:
// until the cut or lost work was delivered again, until the store answered, and what was lost (always 0: the drills
// assert it) or delivered twice. Needs root, like the lab.
//
//   npm run bench:recovery [-- --rounds 1 --only <text>]
//
// A case is one lab run: the drills named, with the environment given (SHOAL_LAB_ZONE picks the zone a drill
// cuts or loses; SHOAL_LAB_LOSS the lossy link's percentage). --only runs the cases whose name holds the text.
// Each drill prints its own figures; this script keeps the table `test/lab/run.ts` prints at the end of a run.
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

interface Case {
  readonly name: string
  readonly drills: readonly string[]
  readonly env: Readonly<Record<string, string>>
}

const zone = (z: string): Case => ({
  name: `zone ${z}`,
  drills: ['zone-cut', 'broker-zone-loss'],
  env: { SHOAL_LAB_ZONE: z }
})

const CASES: readonly Case[] = [
  zone('a'),
  zone('b'),
  zone('c'),
  { name: 'one host', drills: ['dispatcher-cut', 'one-way-cut', 'controller-pause'], env: {} },
  ...[10, 20, 30].map(loss => ({
    name: `loss ${loss} %`,
    drills: ['lossy-link'],
    env: { SHOAL_LAB_LOSS: String(loss) }
  }))
]

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '1' }, only: { type: 'string' } },
  strict: true
})
const rounds = Number(values.rounds)
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, not ${values.rounds}`)
const cases = CASES.filter(c => values.only === undefined || c.name.includes(values.only))
if (cases.length === 0)
  throw new Error(`--only ${values.only}: no case named so (${CASES.map(c => c.name).join(', ')})`)

/** One lab run: its exit code, the rows of the table it printed last, and all it printed (kept when it failed). */
function runLab(c: Case): Promise<{ code: number; rows: string[]; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['scripts/test-lab.sh', ...c.drills.map(d => `test/lab/${d}.lab.ts`)], {
      env: { ...process.env, ...c.env },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.on('error', reject)
    child.on('close', code => {
      const lines = out.split('\n')
      const start = lines.findIndex(line => line.startsWith('Lab drills ('))
      const rows = start < 0 ? [] : lines.slice(start + 2).filter(line => /^[a-z-]+ [a-z]/.test(line))
      resolve({ code: code ?? 1, rows, out })
    })
  })
}

const results: string[] = []
let failed = 0
for (let round = 1; round <= rounds; round++) {
  for (const c of cases) {
    const started = Date.now()
    const { code, rows, out } = await runLab(c)
    let kept = ''
    if (code !== 0) {
      failed++
      kept = join(tmpdir(), `shoal-recovery-${process.pid}-${round}-${c.name.replace(/\W+/g, '-')}.log`)
      writeFileSync(kept, out)
    }
    const took = Math.round((Date.now() - started) / 1000)
    const head = `# round ${round}, ${c.name} (${Object.entries(c.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}): ${code === 0 ? 'passed' : `FAILED (exit ${code}; its output: ${kept})`} in ${took} s`
    process.stdout.write(`${head}\n`)
    results.push(head, ...rows.map(r => `#   ${r}`))
  }
}
process.stdout.write(`\n# recovery, nproc ${(await import('node:os')).availableParallelism()}, ${rounds} round(s):\n`)
for (const line of results) process.stdout.write(`${line}\n`)
process.stdout.write(`# ${failed === 0 ? 'every lab run passed' : `${failed} lab run(s) failed`}\n`)
process.exitCode = failed === 0 ? 0 : 1
