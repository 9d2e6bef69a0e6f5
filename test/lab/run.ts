// `npm run test:lab`: makes the network lab, runs the lab drills inside it, prints their figures, and removes
// the lab — on success, on failure, and on SIGINT, SIGTERM or SIGHUP. A lab left by a run that was killed is
// removed first. See docs/faults.md, "Across hosts: the network lab".
//
//   npm run test:lab                                   every drill
//   npm run test:lab -- test/lab/zone-cut.lab.ts       some
//
// The drills run under node's test runner inside the lab's sink host (`ip netns exec`), so every address they
// use is a lab host's; this process stays in the machine's own namespace and only runs `ip` and `nft`.
// SHOAL_LAB_IF_SUPPORTED=1 (CI) turns "this machine cannot make the lab" into one skip line and exit 0;
// SHOAL_LAB_KEEP=1 keeps the lab's files (every process's log) after a run that passed, as after a failure.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Lab, LabUnsupported, checkSupport, removeStaleLabs, spawnOn } from './lab.ts'
import { hostOf } from './net.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
/** Every test/lab/*.lab.ts, unless files are named (node's runner takes them one at a time, in name order). */
function drills(args: readonly string[]): string[] {
  if (args.length > 0) return [...args]
  return readdirSync(join(root, 'test/lab'))
    .filter(f => f.endsWith('.lab.ts'))
    .sort()
    .map(f => `test/lab/${f}`)
}

function say(line: string): void {
  process.stdout.write(`${line}\n`)
}

async function main(): Promise<number> {
  const started = Date.now()
  try {
    await checkSupport()
  } catch (error) {
    if (!(error instanceof LabUnsupported)) throw error
    if (process.env.SHOAL_LAB_IF_SUPPORTED === '1') {
      say(`lab: skipped: ${error.message}`)
      return 0
    }
    process.stderr.write(`shoal lab: ${error.message}\n`)
    return 1
  }
  const stale = await removeStaleLabs()
  if (stale.length > 0) say(`lab: removed the stale lab(s) of killed runs: ${stale.join(', ')}`)

  const lab = await Lab.create()
  const { description } = lab
  let child: ReturnType<typeof spawnOn> | undefined
  let status = 1
  let signalled: NodeJS.Signals | undefined
  // Ctrl-C reaches the drills too (one process group); SIGTERM or SIGHUP reach only this process. Either way
  // the drill runner is stopped (killed after 15 s), then the lab is removed below as after any run.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) return
    signalled = signal
    say(`lab: ${signal}: stopping the drills and removing the lab`)
    child?.kill('SIGTERM')
    setTimeout(() => child?.kill('SIGKILL'), 15_000).unref()
  }
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal)
  try {
    say(
      `lab ${description.id}: ${description.hosts.length} hosts on ${description.subnet} (files in ${description.dir})`
    )
    for (const h of description.hosts) {
      say(`  ${h.name.padEnd(13)} ${(h.zone ?? '-').padEnd(2)} ${h.address.padEnd(15)} ${h.namespace}`)
    }
    const figures = join(description.dir, 'figures.jsonl')
    const tap = join(description.dir, 'drills.tap')
    const files = drills(process.argv.slice(2))
    child = spawnOn(
      hostOf(description, 'sink'),
      process.execPath,
      [
        '--test',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        '--test-reporter=tap',
        `--test-reporter-destination=${tap}`,
        '--test-concurrency=1',
        `--test-timeout=${process.env.SHOAL_LAB_TIMEOUT_MS ?? 240_000}`,
        '--test-global-setup=test/lab/setup.ts',
        ...files
      ],
      {
        cwd: root,
        stdout: 'inherit',
        env: { ...process.env, SHOAL_LAB: lab.file, SHOAL_FAULTS_FIGURES: figures }
      }
    )
    const running = child
    status = await new Promise<number>(resolve =>
      running.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + 15 : 1)))
    )
    printSummary(figures, tap, status, Date.now() - started)
  } finally {
    // Kept after a failure (and with SHOAL_LAB_KEEP=1): every process's log is in <dir>/logs, the brokers' too.
    const keep = (status !== 0 && signalled === undefined) || process.env.SHOAL_LAB_KEEP === '1'
    await lab.destroy({ keepFiles: keep })
    say(
      keep
        ? `lab: removed; its files (brokers' logs) are kept in ${description.dir} until the next run`
        : 'lab: removed'
    )
  }
  return signalled ? 128 + (signalled === 'SIGINT' ? 2 : 15) : status
}

/** The drills' figures as one table, then the test runner's counts as a plain line. */
function printSummary(figuresFile: string, tapFile: string, status: number, tookMs: number): void {
  const rows = existsSync(figuresFile)
    ? readFileSync(figuresFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(line => JSON.parse(line) as Record<string, string | number>)
    : []
  const head = ['drill', 'produced', 'delivered', 'lost', 'duplicated', 'late', 'times']
  const cols = ['drill', 'produced', 'delivered', 'lost', 'duplicated', 'late', 'times']
  const table = [head, ...rows.map(r => cols.map(c => String(r[c] ?? '-')))]
  const width = head.map((_, i) => Math.max(...table.map(r => r[i]!.length)))
  say(`\nLab drills (${Math.round(tookMs / 1000)} s with the lab's set-up, exit ${status}):`)
  for (const r of table) {
    say(
      r
        .map((v, i) => (i === 0 || i === r.length - 1 ? v.padEnd(width[i]!) : v.padStart(width[i]!)))
        .join('  ')
        .trimEnd()
    )
  }
  const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : ''
  const count = (what: string): number => Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0)
  say(`lab: ${count('pass')} passed, ${count('fail')} failed`)
}

process.exitCode = await main()
