import { createServer } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseArgs } from 'node:util'
import { parseIsoDuration } from '../api/index.ts'
import { parseDuration } from '../util/index.ts'

export interface EventDisplayOptions {
  readonly port?: number
  readonly host?: string
  /** Status every request is answered with (default 202). */
  readonly status?: number
  /** Milliseconds to hold each answer. */
  readonly delayMs?: number
  /** Fraction of requests answered 503 instead, 0..1. */
  readonly failRate?: number
  readonly write: (text: string) => void
}

/** An event display: prints every CloudEvent it receives, readably, as Knative's event-display does. */
export async function startEventDisplay(options: EventDisplayOptions): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      options.write(formatEvent(req.headers, Buffer.concat(chunks)))
      const status = Math.random() < (options.failRate ?? 0) ? 503 : (options.status ?? 202)
      setTimeout(() => res.writeHead(status).end(), options.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 8081, options.host ?? '127.0.0.1', () => resolve())
  })
  const address = server.address() as AddressInfo
  return { url: `http://${address.address}:${address.port}/`, server }
}

/** The event in the shape of Knative's event display: context attributes, extensions, data. */
export function formatEvent(headers: Record<string, string | string[] | undefined>, body: Buffer): string {
  const context = ['specversion', 'type', 'source', 'subject', 'id', 'time', 'datacontenttype', 'dataschema']
  const lines = ['☁️  cloudevents.Event', 'Context Attributes,']
  for (const name of context) {
    const value =
      name === 'datacontenttype' ? (headers['content-type'] ?? headers['ce-datacontenttype']) : headers[`ce-${name}`]
    if (value !== undefined) lines.push(`  ${name}: ${decode(String(value))}`)
  }
  const extensions = Object.keys(headers)
    .filter(h => h.startsWith('ce-') && !context.includes(h.slice(3)))
    .sort()
  if (extensions.length > 0) {
    lines.push('Extensions,')
    for (const h of extensions) lines.push(`  ${h.slice(3)}: ${decode(String(headers[h]))}`)
  }
  lines.push('Data,')
  const text = body.toString('utf8')
  const printable = Buffer.from(text, 'utf8').equals(body) && ![...text].some(isControl)
  lines.push(`  ${printable ? text : `<${body.length} bytes, base64> ${body.toString('base64')}`}`)
  return `${lines.join('\n')}\n\n`
}

/** Control characters other than tab, newline and carriage return: such data is shown as base64. */
function isControl(char: string): boolean {
  const code = char.charCodeAt(0)
  return code < 0x20 && char !== '\t' && char !== '\n' && char !== '\r'
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

/** `shoal sink [--port N] [--status CODE] [--delay DURATION] [--fail-rate P]` */
export async function runSink(argv: readonly string[]): Promise<number> {
  let values
  try {
    ;({ values } = parseArgs({
      args: [...argv],
      options: {
        port: { type: 'string', default: '8081' },
        status: { type: 'string', default: '202' },
        delay: { type: 'string' },
        'fail-rate': { type: 'string', default: '0' },
        help: { type: 'boolean', short: 'h' }
      },
      strict: true
    }))
  } catch (error) {
    process.stderr.write(`shoal sink: ${(error as Error).message}\n`)
    return 2
  }
  if (values.help) {
    process.stdout.write('usage: shoal sink [--port 8081] [--status 202] [--delay PT2S|2s] [--fail-rate 0.1]\n')
    return 0
  }
  const port = Number(values.port)
  const status = Number(values.status)
  const failRate = Number(values['fail-rate'])
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return usage(`--port must be a port number, not "${values.port}"`)
  if (!Number.isInteger(status) || status < 100 || status > 599)
    return usage(`--status must be an HTTP status, not "${values.status}"`)
  if (!(failRate >= 0 && failRate <= 1))
    return usage(`--fail-rate must be between 0 and 1, not "${values['fail-rate']}"`)
  let delayMs = 0
  if (values.delay !== undefined) {
    try {
      delayMs = parseDuration(values.delay) ?? parseIsoDuration(values.delay)
    } catch {
      return usage(`--delay must be a duration like 2s or PT2S, not "${values.delay}"`)
    }
  }
  const { url, server } = await startEventDisplay({
    port,
    status,
    delayMs,
    failRate,
    write: t => process.stdout.write(t)
  })
  process.stdout.write(`Event display listening on ${url}\n`)
  await new Promise<void>(resolve => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  server.close()
  return 0
}

function usage(message: string): number {
  process.stderr.write(`shoal sink: ${message}\n`)
  return 2
}
