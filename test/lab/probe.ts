// Probes of the lab's network, for the lab's own drill (network-faults.lab.ts): a listener on a host that
// accepts TCP and counts UDP datagrams, a TCP connect from one host to another, and a burst of datagrams.
import { createInterface } from 'node:readline'
import type { LabHost } from './net.ts'
import { runOn, spawnOn } from './lab.ts'

export const PROBE_PORT = 7000

// Accepts and closes TCP connections; prints `u` per datagram. Ends by itself after 5 minutes at most.
const LISTENER = `
const net = require('node:net'), dgram = require('node:dgram')
const [address, port] = process.argv.slice(1)
const tcp = net.createServer(s => s.destroy()).listen(Number(port), address)
const udp = dgram.createSocket('udp4')
udp.on('message', () => process.stdout.write('u\\n'))
udp.bind(Number(port), address, () => tcp.listening ? console.log('ready') : tcp.once('listening', () => console.log('ready')))
setTimeout(() => process.exit(0), 300000).unref()
`

/** A listener on a host: TCP connections are accepted, UDP datagrams counted. */
export interface Probe {
  readonly host: LabHost
  /** Datagrams received so far. */
  readonly datagrams: number
  stop(): Promise<void>
}

export async function startProbe(host: LabHost, port = PROBE_PORT): Promise<Probe> {
  const child = spawnOn(host, process.execPath, ['-e', LISTENER, host.address, String(port)])
  let datagrams = 0
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`probe on ${host.name} did not start`)), 30_000)
    createInterface({ input: child.stdout! }).on('line', line => {
      if (line === 'ready') {
        clearTimeout(timer)
        resolve()
      } else if (line === 'u') datagrams++
    })
    child.once('exit', code => {
      clearTimeout(timer)
      reject(new Error(`probe on ${host.name} exited with ${code}`))
    })
  })
  return {
    host,
    get datagrams() {
      return datagrams
    },
    async stop() {
      child.kill('SIGKILL')
      await exited
    }
  }
}

/**
 * Whether a TCP connection from `from` to `to:port` gets an answer within `timeoutS` (a refusal is an answer):
 * a cut drops the SYN, and the connect times out.
 */
export async function tcpReaches(from: LabHost, to: LabHost, port = PROBE_PORT, timeoutS = 1.5): Promise<boolean> {
  const result = await runOn(from, 'timeout', [
    String(timeoutS),
    'bash',
    '-c',
    `exec 3<>/dev/tcp/${to.address}/${port}`
  ])
  return result.code !== 124
}

/** Sends `count` datagrams from `from` to `to:port`, a millisecond apart. */
export async function sendDatagrams(from: LabHost, to: LabHost, count: number, port = PROBE_PORT): Promise<void> {
  await runOn(from, 'bash', [
    '-c',
    `for i in $(seq 1 ${count}); do echo x >/dev/udp/${to.address}/${port}; sleep 0.001; done`
  ])
}

/** Whether the host has a route to an address outside the lab (it must not: no gateway, no NAT). */
export async function routesOutside(host: LabHost, address = '192.0.2.1'): Promise<boolean> {
  return (await runOn(host, 'ip', ['route', 'get', address])).code === 0
}
