import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ErrorCodes, ShoalError } from '../errors/index.ts'
import type { HealthReport } from './dispatcher-metrics.ts'

/** Something that renders metrics (DispatcherMetrics, or a prom-client Registry). */
export interface MetricsSource {
  readonly contentType: string
  metrics(): Promise<string>
}

export interface MetricsServerOptions {
  readonly metrics: MetricsSource
  /** 0 picks a free port. */
  readonly port: number
  /** Default: every interface. */
  readonly host?: string
  /** What /healthz reports; without it /healthz answers 200 while the server runs. */
  readonly health?: () => HealthReport
}

/** A running /metrics and /healthz endpoint. */
export interface MetricsServer {
  readonly port: number
  /** `http://host:port`, for logs and tests. */
  readonly url: string
  close(): Promise<void>
}

/** Serves GET /metrics (Prometheus text format) and GET /healthz (JSON, 200 or 503) over node:http. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => void handle(options, req, res))
  server.listen(options.port, options.host)
  try {
    await once(server, 'listening')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ShoalError(ErrorCodes.PORT_IN_USE, `metrics port ${options.port} is in use`, { cause: error })
    }
    throw error
  }
  const { port } = server.address() as AddressInfo
  const host =
    options.host === undefined || options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    async close() {
      const closed = new Promise<void>(resolve => server.close(() => resolve()))
      // Prometheus keeps its scrape connection alive; an idle one must not hold close() up.
      server.closeAllConnections()
      await closed
    }
  }
}

async function handle(options: MetricsServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]
  if (path !== '/metrics' && path !== '/healthz') return reply(res, 404, 'text/plain', 'not found\n')
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD')
    return reply(res, 405, 'text/plain', 'method not allowed\n')
  }
  if (path === '/healthz') {
    const report = options.health?.() ?? { ok: true, status: 'running' }
    return reply(res, report.ok ? 200 : 503, 'application/json', `${JSON.stringify(report)}\n`)
  }
  try {
    reply(res, 200, options.metrics.contentType, await options.metrics.metrics())
  } catch (error) {
    reply(res, 500, 'text/plain', `collecting metrics failed: ${String(error)}\n`)
  }
}

function reply(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) })
  res.end(res.req.method === 'HEAD' ? undefined : body)
}
