// The network lab's side effects: making and removing its namespaces, bridge and addresses, running commands
// and processes on its hosts. What a lab looks like is net.ts; the faults are faults.ts.
//
// Every command here is `ip` or `nft` (as root), or a process started inside a host namespace with
// `ip netns exec`. Nothing is added to the machine's own network namespace: the bridge lives in the lab's
// switch namespace, so lab traffic cannot leave the lab.

import { execFile, spawn } from 'node:child_process'
import type { ChildProcess, SpawnOptions } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HOST_INTERFACE, NAMESPACE_PREFIX, baseRuleset, describeLab, labIdOf, newLabId } from './net.ts'
import type { HostSpec, LabDescription, LabHost } from './net.ts'

/** The lab cannot be made on this machine (no root, no `ip netns`, no nftables): one line says why. */
export class LabUnsupported extends Error {}

const BRIDGE = 'br0'

export interface CommandResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to completion (30 s at most); never throws for a non-zero exit. */
export function run(command: string, args: readonly string[], input?: string): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      [...args],
      { timeout: 30_000, maxBuffer: 8 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its type is an Omit<> of one
          reject(error)
          return
        }
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr })
      }
    )
    if (input !== undefined) child.stdin?.end(input)
  })
}

/** Runs a command and throws, naming it and its stderr, unless it exits 0. */
export async function must(command: string, args: readonly string[], input?: string): Promise<string> {
  const result = await run(command, args, input)
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')}: exit ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`
    )
  }
  return result.stdout
}

/** Runs a command inside a host's namespace. */
export function runOn(host: LabHost | string, command: string, args: readonly string[], input?: string) {
  const namespace = typeof host === 'string' ? host : host.namespace
  return run('ip', ['netns', 'exec', namespace, command, ...args], input)
}

/** Like runOn, throwing unless it exits 0. */
export function mustOn(host: LabHost | string, command: string, args: readonly string[], input?: string) {
  const namespace = typeof host === 'string' ? host : host.namespace
  return must('ip', ['netns', 'exec', namespace, command, ...args], input)
}

// Runs the command through a tiny shell that first starts a watcher on its stdin pipe, then execs the command
// (same pid, so signals sent to the child reach the program itself: SIGSTOP stops it). The pipe's other end is
// held only by the process that spawned it, so when that one dies, even by SIGKILL, the watcher reads EOF and
// kills the program: a drill that is killed leaves no process behind. (src/kafka/embedded does the same.)
const WATCHDOG = 'exec 3<&0; (cat <&3 >/dev/null 2>&1; kill -KILL $$ 2>/dev/null) & exec "$@" 3<&- </dev/null'

/** Where a spawned program's stdout and stderr go: pipes, nowhere, or a file descriptor (one file for both). */
export type Output = 'pipe' | 'ignore' | 'inherit' | number

/** Starts a long-running program on a host; it dies with the spawning process. stdin is the watchdog's. */
export function spawnOn(
  host: LabHost,
  command: string,
  args: readonly string[],
  options: Omit<SpawnOptions, 'stdio'> & { readonly stdout?: Output } = {}
): ChildProcess {
  const { stdout = 'pipe', ...rest } = options
  const child = spawn('ip', ['netns', 'exec', host.namespace, 'sh', '-c', WATCHDOG, 'shoal-lab', command, ...args], {
    ...rest,
    stdio: ['pipe', stdout, stdout]
  })
  child.once('exit', () => child.stdin?.destroy())
  return child
}

// ---- support ----

/**
 * Throws LabUnsupported, with one line saying what is missing, unless this machine can make the lab: `ip` and
 * `nft`, network namespaces (root), a bridge and nftables inside a namespace.
 */
export async function checkSupport(): Promise<void> {
  const tool = async (command: string, args: string[]): Promise<void> => {
    try {
      await run(command, args)
    } catch {
      throw new LabUnsupported(
        `no \`${command}\` on this machine (install ${command === 'nft' ? 'nftables' : 'iproute2'})`
      )
    }
  }
  await tool('ip', ['-V'])
  await tool('nft', ['--version'])
  const probe = `${NAMESPACE_PREFIX}probe${process.pid}-x`
  const made = await run('ip', ['netns', 'add', probe])
  if (made.code !== 0) {
    throw new LabUnsupported(
      `cannot make network namespaces here (ip netns add: ${made.stderr.trim() || `exit ${made.code}`}); ` +
        'the lab needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)'
    )
  }
  try {
    const bridge = await run('ip', ['-n', probe, 'link', 'add', BRIDGE, 'type', 'bridge'])
    if (bridge.code !== 0) throw new LabUnsupported(`cannot make a bridge in a namespace: ${bridge.stderr.trim()}`)
    const nft = await runOn(probe, 'nft', ['-f', '-'], baseRuleset())
    if (nft.code !== 0) throw new LabUnsupported(`cannot use nftables in a namespace: ${nft.stderr.trim()}`)
  } finally {
    await run('ip', ['netns', 'del', probe])
  }
}

// ---- owners and stale labs ----

/** Where a lab keeps its files: `<tmp>/shoal-lab-<id>`. */
export function labDir(id: string): string {
  return join(tmpdir(), `shoal-lab-${id}`)
}

interface Owner {
  readonly pid: number
  /** The owner's start time (/proc/<pid>/stat, field 22), so a reused pid is not taken for the owner. */
  readonly started: string
}

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

function ownerAlive(id: string): boolean {
  try {
    const owner = JSON.parse(readFileSync(join(labDir(id), 'owner.json'), 'utf8')) as Owner
    return startTimeOf(owner.pid) === owner.started
  } catch {
    return false
  }
}

/** Every network namespace on the machine. */
async function namespaces(): Promise<string[]> {
  const listed = await must('ip', ['netns', 'list'])
  return listed
    .split('\n')
    .map(line => line.split(' ')[0]!)
    .filter(Boolean)
}

/** SIGKILLs every process in the namespace (all of them started by a lab), waits for them, then deletes it. */
async function deleteNamespace(namespace: string): Promise<void> {
  const pids = (await run('ip', ['netns', 'pids', namespace])).stdout.split('\n').filter(Boolean).map(Number)
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
  const deadline = Date.now() + 10_000
  while (pids.some(pid => existsSync(`/proc/${pid}`)) && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  await run('ip', ['netns', 'del', namespace])
}

/**
 * Removes the labs of runs that died without tearing theirs down (SIGKILL, a machine reboot keeps nothing, a
 * crash): every `shoal-lab-<id>-*` namespace and `<tmp>/shoal-lab-<id>` folder whose owner is not running.
 * A lab whose owner runs is left alone, so two runs on one machine do not remove each other's. Returns the ids.
 */
export async function removeStaleLabs(): Promise<string[]> {
  const byId = new Map<string, string[]>()
  for (const namespace of await namespaces()) {
    const id = labIdOf(namespace)
    if (id === undefined || namespace.startsWith(`${NAMESPACE_PREFIX}probe`)) continue
    byId.set(id, [...(byId.get(id) ?? []), namespace])
  }
  for (const entry of readdirSync(tmpdir())) {
    const id = /^shoal-lab-([a-z0-9]+)$/.exec(entry)?.[1]
    if (id !== undefined && !byId.has(id)) byId.set(id, [])
  }
  const removed: string[] = []
  for (const [id, spaces] of byId) {
    if (ownerAlive(id)) continue
    // Hosts first, the switch last: a host's veth goes with its namespace.
    for (const namespace of spaces.sort((a, b) => Number(a.endsWith('-switch')) - Number(b.endsWith('-switch')))) {
      await deleteNamespace(namespace)
    }
    rmSync(labDir(id), { recursive: true, force: true })
    removed.push(id)
  }
  return removed
}

// ---- a lab ----

export interface CreateLabOptions {
  readonly id?: string
  readonly hosts?: readonly HostSpec[]
}

/** A lab this process made, and owns until destroy(). */
export class Lab {
  readonly description: LabDescription
  #destroyed: Promise<void> | undefined

  private constructor(description: LabDescription) {
    this.description = description
  }

  /** The lab's description file (SHOAL_LAB names it for the drills). */
  get file(): string {
    return join(this.description.dir, 'lab.json')
  }

  /**
   * Makes a lab: its folder (owned by this process), the switch namespace with the bridge, and one namespace per
   * host with its veth, address and empty nftables chains. A failure part-way removes what was made.
   */
  static async create(options: CreateLabOptions = {}): Promise<Lab> {
    const id = options.id ?? newLabId()
    const dir = labDir(id)
    mkdirSync(dir, { recursive: true })
    const owner: Owner = { pid: process.pid, started: startTimeOf(process.pid) ?? '' }
    writeFileSync(join(dir, 'owner.json'), JSON.stringify(owner) + '\n')
    const lab = new Lab(describeLab(id, dir, options.hosts))
    try {
      await lab.#build()
    } catch (error) {
      await lab.destroy()
      throw error
    }
    writeFileSync(lab.file, JSON.stringify(lab.description, null, 2) + '\n')
    return lab
  }

  async #build(): Promise<void> {
    const { switchNamespace, hosts } = this.description
    await must('ip', ['netns', 'add', switchNamespace])
    await must('ip', ['-n', switchNamespace, 'link', 'set', 'lo', 'up'])
    await must('ip', ['-n', switchNamespace, 'link', 'add', BRIDGE, 'type', 'bridge'])
    await must('ip', ['-n', switchNamespace, 'link', 'set', BRIDGE, 'up'])
    for (const [i, host] of hosts.entries()) {
      const ns = host.namespace
      const port = `h${i}`
      await must('ip', ['netns', 'add', ns])
      // Made in the switch namespace with its peer straight in the host's: nothing passes through the machine's.
      await must('ip', [
        '-n',
        switchNamespace,
        'link',
        'add',
        port,
        'type',
        'veth',
        'peer',
        'name',
        HOST_INTERFACE,
        'netns',
        ns
      ])
      await must('ip', ['-n', switchNamespace, 'link', 'set', port, 'master', BRIDGE, 'up'])
      // IPv4 only: every rule of a fault matches IPv4, so no IPv6 link-local path may go around a cut.
      await mustOn(ns, 'sysctl', ['-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1'])
      await must('ip', ['-n', ns, 'addr', 'add', `${host.address}/24`, 'dev', HOST_INTERFACE])
      await must('ip', ['-n', ns, 'link', 'set', HOST_INTERFACE, 'up'])
      await must('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
      await mustOn(ns, 'nft', ['-f', '-'], baseRuleset())
    }
  }

  /** Kills every process on the lab's hosts, removes its namespaces and (unless `keepFiles`) its folder. */
  destroy(options: { readonly keepFiles?: boolean } = {}): Promise<void> {
    this.#destroyed ??= (async () => {
      const { hosts, switchNamespace, dir } = this.description
      const existing = new Set(await namespaces())
      for (const namespace of [...hosts.map(h => h.namespace), switchNamespace]) {
        if (existing.has(namespace)) await deleteNamespace(namespace)
      }
      if (options.keepFiles) rmSync(join(dir, 'owner.json'), { force: true })
      else rmSync(dir, { recursive: true, force: true })
    })()
    return this.#destroyed
  }
}

/** The lab the drills run in: the description SHOAL_LAB names (set by test/lab/run.ts). */
export function labFromEnv(): LabDescription {
  const file = process.env.SHOAL_LAB
  if (!file) throw new Error('SHOAL_LAB is not set: run the lab drills with `npm run test:lab`')
  return JSON.parse(readFileSync(file, 'utf8')) as LabDescription
}
