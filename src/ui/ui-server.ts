import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { UiSnapshot } from './snapshot.ts'

export interface UiServerOptions {
  /** The dashboard's state now. */
  readonly snapshot: () => UiSnapshot
  /** How often connected pages are sent a changed state (default 500 ms); nothing is sent when nothing changed. */
  readonly pushIntervalMs?: number
}

/** Third-party modules the page imports, by the names its import map gives them. */
const VENDOR: Readonly<Record<string, string>> = {
  'preact.js': 'preact',
  'hooks.js': 'preact/hooks',
  'htm.js': 'htm'
}

/** The page's own modules: plain JavaScript beside this file; from dist/ (where tsc copies no .js), the sources'. */
const webDir = existsSync(new URL('./web/app.js', import.meta.url))
  ? new URL('./web/', import.meta.url)
  : new URL('../../src/ui/web/', import.meta.url)

/**
 * The web dashboard under `/ui`: the page, its modules and their dependencies (preact, htm — served from
 * node_modules, so it works without internet), `/ui/state` (JSON) and `/ui/events` (server-sent events: the whole
 * state whenever it changed).
 */
export class UiServer {
  readonly #options: UiServerOptions
  readonly #clients = new Set<ServerResponse>()
  readonly #assets = new Map<string, Promise<string>>()
  #timer: NodeJS.Timeout | undefined
  #keepAlive: NodeJS.Timeout | undefined
  #last = ''

  constructor(options: UiServerOptions) {
    this.#options = options
  }

  /** Answers a request under /ui; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (path !== '/ui' && !path.startsWith('/ui/')) return false
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n')
      return true
    }
    const rest = path.slice('/ui'.length).replace(/^\/+/, '')
    if (rest === '' || rest === 'index.html') {
      send(res, 200, 'text/html; charset=utf-8', page())
      return true
    }
    if (rest === 'state') {
      send(res, 200, 'application/json', JSON.stringify(this.#options.snapshot()))
      return true
    }
    if (rest === 'events') {
      this.#subscribe(req, res)
      return true
    }
    const vendor = rest.startsWith('vendor/') ? VENDOR[rest.slice('vendor/'.length)] : undefined
    const asset = vendor ? vendorFile(vendor) : /^[a-z][a-z-]*\.js$/.test(rest) ? new URL(rest, webDir) : undefined
    if (asset === undefined) {
      send(res, 404, 'text/plain', 'not found\n')
      return true
    }
    this.#load(asset)
      .then(text => send(res, 200, 'text/javascript; charset=utf-8', text, 'max-age=60'))
      .catch(() => send(res, 404, 'text/plain', 'not found\n'))
    return true
  }

  /** Ends every event stream. */
  close(): void {
    clearInterval(this.#timer)
    clearInterval(this.#keepAlive)
    this.#timer = undefined
    for (const client of this.#clients) client.end()
    this.#clients.clear()
  }

  #subscribe(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive'
    })
    const state = JSON.stringify(this.#options.snapshot())
    res.write(`retry: 1000\nevent: state\ndata: ${state}\n\n`)
    this.#clients.add(res)
    req.on('close', () => {
      this.#clients.delete(res)
      if (this.#clients.size === 0) this.close()
    })
    if (!this.#timer) {
      this.#last = state
      this.#timer = setInterval(() => this.#push(), this.#options.pushIntervalMs ?? 500)
      // A comment now and then keeps proxies from closing an idle stream.
      this.#keepAlive = setInterval(() => {
        for (const client of this.#clients) client.write(': keep-alive\n\n')
      }, 15_000)
    }
  }

  #push(): void {
    const state = JSON.stringify(this.#options.snapshot())
    if (state === this.#last) return
    this.#last = state
    for (const client of this.#clients) client.write(`event: state\ndata: ${state}\n\n`)
  }

  #load(file: URL): Promise<string> {
    const key = file.href
    let text = this.#assets.get(key)
    if (!text) {
      text = readFile(file, 'utf8')
      text.catch(() => this.#assets.delete(key))
      this.#assets.set(key, text)
    }
    return text
  }
}

function vendorFile(specifier: string): URL {
  return new URL(import.meta.resolve(specifier))
}

function send(res: ServerResponse, status: number, type: string, body: string, cache = 'no-cache'): void {
  if (res.headersSent) return
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': cache })
  res.end(res.req.method === 'HEAD' ? undefined : body)
}

function page(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Shoal</title>
<link rel="icon" href="data:,">
<script type="importmap">{"imports":{"preact":"/ui/vendor/preact.js","preact/hooks":"/ui/vendor/hooks.js","htm":"/ui/vendor/htm.js"}}</script>
<style>${STYLE}</style>
</head>
<body>
<div id="app"><p class="muted">Loading…</p></div>
<script type="module" src="/ui/app.js"></script>
</body>
</html>
`
}

const STYLE = `
:root { --bg:#0f1720; --panel:#17212b; --line:#2a3947; --text:#e6edf3; --muted:#8b9bab; --ok:#3fb950; --warn:#d29922; --bad:#f85149; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background:var(--bg); color:var(--text); }
header { display:flex; gap:16px; align-items:baseline; padding:12px 20px; border-bottom:1px solid var(--line); }
header h1 { margin:0; font-size:18px; }
main { padding:16px 20px; display:grid; gap:20px; }
h2 { font-size:15px; margin:0 0 8px; color:var(--muted); font-weight:600; text-transform:uppercase; letter-spacing:.04em; }
.muted { color:var(--muted); }
.zones { display:grid; grid-template-columns:repeat(auto-fit, minmax(260px, 1fr)); gap:12px; }
.zone { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:10px; }
.zone > h3 { margin:0 0 8px; font-size:14px; }
.dispatcher { border:1px solid var(--line); border-radius:6px; padding:8px; margin-bottom:8px; }
.dispatcher.Dead { border-color:var(--bad); opacity:.6; }
.dispatcher.Cordoned { border-style:dashed; border-color:var(--warn); }
.dispatcher .title { display:flex; justify-content:space-between; gap:8px; }
.slots { display:flex; flex-wrap:wrap; gap:3px; margin-top:6px; min-height:16px; }
.slot { width:14px; height:14px; border-radius:3px; }
.slot.free { background:transparent; border:1px dashed var(--line); }
.badge { display:inline-block; padding:0 6px; border-radius:10px; font-size:12px; border:1px solid var(--line); margin-right:4px; }
.badge.True { border-color:var(--ok); color:var(--ok); }
.badge.False { border-color:var(--bad); color:var(--bad); }
.badge.Unknown { border-color:var(--warn); color:var(--warn); }
table { border-collapse:collapse; width:100%; background:var(--panel); border:1px solid var(--line); border-radius:8px; }
td:first-child { white-space:nowrap; }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:middle; }
th { color:var(--muted); font-weight:600; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:6px; }
.pending { background:var(--panel); border:1px solid var(--warn); border-radius:8px; padding:10px; }
svg.spark { display:block; }
.live { font-size:12px; }
.live.on::before { content:"● "; color:var(--ok); }
.live.off::before { content:"● "; color:var(--bad); }
`
