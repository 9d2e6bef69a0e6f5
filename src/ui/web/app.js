/* global document, EventSource */
// The dashboard page: preact components written with htm (tagged templates, so no build step), fed by the
// controller's server-sent events. Plain JavaScript, served as it is; it imports only what the page's import map
// names. The state it renders is UiSnapshot (src/ui/snapshot.ts).
import { h, render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import htm from 'htm'

const html = htm.bind(h)

/** A stable colour per source, so its vreplicas are told apart across dispatchers. */
export function colourOf(source) {
  let hash = 0
  for (let i = 0; i < source.length; i++) hash = (hash * 31 + source.charCodeAt(i)) >>> 0
  return `hsl(${hash % 360}, 65%, 55%)`
}

function Sparkline(props) {
  const width = 140
  const height = 28
  const values = props.points.map(props.pick)
  if (values.length < 2) return html`<span class="muted">—</span>`
  const max = Math.max(1, ...values)
  const t0 = props.points[0].at
  const span = Math.max(1, props.points.at(-1).at - t0)
  const path = props.points
    .map(
      (p, i) =>
        `${(((p.at - t0) / span) * width).toFixed(1)},${(height - (values[i] / max) * (height - 2) - 1).toFixed(1)}`
    )
    .join(' ')
  return html`<svg class="spark" width=${width} height=${height} role="img" aria-label=${props.label}>
    <title>${props.label}: max ${Math.round(max)}</title>
    <polyline fill="none" stroke=${props.colour} stroke-width="1.5" points=${path} />
  </svg>`
}

function Dispatcher(props) {
  const d = props.d
  const slots = d.vreplicas.flatMap(v =>
    Array.from(
      { length: v.count },
      (_, i) =>
        html`<span
          class="slot"
          key=${`${v.source}-${i}`}
          data-vreplica=""
          data-source=${v.source}
          title=${v.source}
          style=${{ background: colourOf(v.source) }}
        ></span>`
    )
  )
  const free = Array.from(
    { length: Math.max(0, d.capacity - d.used) },
    (_, i) => html`<span class="slot free" key=${`free-${i}`}></span>`
  )
  return html`<div class=${`dispatcher ${d.state}`} data-dispatcher=${d.id} data-state=${d.state}>
    <div class="title"><strong>${d.id}</strong><span class="muted">${d.state} · ${d.used}/${d.capacity}</span></div>
    <div class="muted">node ${d.node}</div>
    <div class="slots">${slots}${free}</div>
  </div>`
}

function Zone(props) {
  return html`<section class="zone" data-zone=${props.zone.name}>
    <h3>zone ${props.zone.name}</h3>
    ${props.zone.dispatchers.map(d => html`<${Dispatcher} key=${d.id} d=${d} />`)}
  </section>`
}

function formatRate(rate) {
  if (rate === undefined) return '—'
  return rate >= 100 ? `${Math.round(rate)}/s` : `${rate.toFixed(1)}/s`
}

function SourceRow(props) {
  const s = props.s
  const colour = colourOf(s.name)
  return html`<tr data-source-row=${s.name}>
    <td><span class="swatch" style=${{ background: colour }}></span>${s.name}</td>
    <td>${s.kind}</td>
    <td>
      ${s.placed}/${s.desired}${s.pending > 0 ? html` <span class="badge False">${s.pending} pending</span>` : ''}
    </td>
    <td>
      ${s.conditions.map(
        c =>
          html`<span class=${`badge ${c.status}`} title=${[c.reason, c.message].filter(Boolean).join(': ')}
            >${c.type}</span
          >`
      )}
    </td>
    <td>${s.lag ?? '—'}</td>
    <td>
      ${s.history ? html`<${Sparkline} points=${s.history} pick=${p => p.lag} colour=${colour} label="lag" />` : ''}
    </td>
    <td>${formatRate(s.rate)}</td>
    <td>
      ${s.history ? html`<${Sparkline} points=${s.history} pick=${p => p.rate} colour=${colour} label="events/s" />` : ''}
    </td>
  </tr>`
}

/** A source's flow control gates, one row per dispatcher and sink: the limit now, requests in flight and waiting. */
function FlowRows(props) {
  const s = props.s
  return s.flow.map(
    f =>
      html`<tr key=${`${f.dispatcher} ${f.sink}`} data-flow-row=${s.name} data-dispatcher-id=${f.dispatcher}>
        <td><span class="swatch" style=${{ background: colourOf(s.name) }}></span>${s.name}</td>
        <td>${f.dispatcher}</td>
        <td>${f.sink}</td>
        <td data-limit=${f.limit}>${f.adaptive ? `adaptive ${f.limit}` : f.limit}</td>
        <td>${f.inFlight}</td>
        <td>${f.queued}</td>
        <td>${f.latencyMs === undefined ? '—' : `${f.latencyMs} ms`}</td>
      </tr>`
  )
}

function FlowControl(props) {
  const gated = props.sources.filter(s => s.flow)
  if (gated.length === 0) return ''
  return html`<section data-flow-control="">
    <h2>Per-sink flow control</h2>
    <table>
      <thead>
        <tr>
          <th>source</th>
          <th>dispatcher</th>
          <th>sink</th>
          <th>limit</th>
          <th>in flight</th>
          <th>queued</th>
          <th>latency</th>
        </tr>
      </thead>
      <tbody>
        ${gated.map(s => html`<${FlowRows} key=${s.kind + s.name} s=${s} />`)}
      </tbody>
    </table>
  </section>`
}

/** How long a request has been in flight: ms under a second, then seconds, then minutes and seconds. */
function formatAge(ms) {
  if (ms === 0) return '—'
  if (ms < 1000) return `${ms} ms`
  const seconds = Math.floor(ms / 1000)
  return seconds < 120 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`
}

/** A request in flight this long (or longer) is marked: the sink is holding it, or stalled. */
const STALLED_MS = 10_000

/**
 * A source's sink origins, one row per dispatcher and origin (its sink, its dead letter sink), over every source of
 * that dispatcher sending there: requests in flight, the oldest one's age, requests sent again, connections the sink
 * never accepted. Rows with nothing in flight and nothing ever sent again are left out.
 */
function OriginRows(props) {
  const s = props.s
  return s.origins
    .filter(o => o.inFlight > 0 || o.resent > 0 || o.notAccepted > 0)
    .map(
      o =>
        html`<tr
          key=${`${o.dispatcher} ${o.origin}`}
          data-origin-row=${s.name}
          data-dispatcher-id=${o.dispatcher}
          data-oldest-ms=${o.oldestInFlightMs}
        >
          <td><span class="swatch" style=${{ background: colourOf(s.name) }}></span>${s.name}</td>
          <td>${o.dispatcher}</td>
          <td>${o.origin}</td>
          <td>${o.inFlight}</td>
          <td>
            ${
              o.oldestInFlightMs >= STALLED_MS
                ? html`<span class="badge False" title="the sink has not answered it yet"
                    >${formatAge(o.oldestInFlightMs)}</span
                  >`
                : formatAge(o.oldestInFlightMs)
            }
          </td>
          <td>${o.resent > 0 ? html`<span class="badge Unknown">${o.resent}</span>` : o.resent}</td>
          <td>${o.notAccepted}</td>
        </tr>`
    )
}

function SinkOrigins(props) {
  const active = props.sources.filter(s =>
    (s.origins ?? []).some(o => o.inFlight > 0 || o.resent > 0 || o.notAccepted > 0)
  )
  if (active.length === 0) return ''
  return html`<section data-sink-origins="">
    <h2>Sink origins</h2>
    <p class="muted">
      Per dispatcher, its connections to each source's sink and dead letter sink, shared by every source sending there;
      origins with nothing in flight and nothing sent again are not listed.
    </p>
    <table>
      <thead>
        <tr>
          <th>source</th>
          <th>dispatcher</th>
          <th>origin</th>
          <th>in flight</th>
          <th>oldest in flight</th>
          <th>resent</th>
          <th>not accepted</th>
        </tr>
      </thead>
      <tbody>
        ${active.map(s => html`<${OriginRows} key=${s.kind + s.name} s=${s} />`)}
      </tbody>
    </table>
  </section>`
}

function App() {
  const [state, setState] = useState(undefined)
  const [live, setLive] = useState(false)
  useEffect(() => {
    const events = new EventSource('/ui/events')
    events.addEventListener('state', e => setState(JSON.parse(e.data)))
    events.onopen = () => setLive(true)
    events.onerror = () => setLive(false)
    return () => events.close()
  }, [])
  if (!state) return html`<p class="muted">Connecting…</p>`
  const pending = state.sources.filter(s => s.pending > 0)
  return html`
    <header>
      <h1>Shoal</h1>
      <span class="muted">controller ${state.replicaId}${state.leader ? ' (scheduler leader)' : ''}</span>
      <span class=${`live ${live ? 'on' : 'off'}`}>${live ? 'live' : 'reconnecting'}</span>
      <span class="muted">${new Date(state.at).toLocaleTimeString()}</span>
    </header>
    <main>
      ${
        !state.leader && state.leaderUrl
          ? html`<p class="muted">
              Lag is measured by the scheduler leader: <a href=${`${state.leaderUrl}/ui`}>its dashboard</a>.
            </p>`
          : ''
      }
      <section>
        <h2>Zones and dispatchers</h2>
        <div class="zones">${state.zones.map(z => html`<${Zone} key=${z.name} zone=${z} />`)}</div>
        ${state.zones.length === 0 ? html`<p class="muted">No dispatchers yet.</p>` : ''}
      </section>
      <section class="pending" data-pending-count=${pending.reduce((n, s) => n + s.pending, 0)}>
        <h2>Pending vreplicas</h2>
        ${
          pending.length === 0
            ? html`<span class="muted">none: every vreplica is placed</span>`
            : pending.map(
                s =>
                  html`<div data-pending=${s.name}>
                    <span class="swatch" style=${{ background: colourOf(s.name) }}></span><strong>${s.name}</strong>:
                    ${s.pending} pending — ${s.reason ?? ''} ${s.message ?? ''}
                  </div>`
              )
        }
      </section>
      <section>
        <h2>Sources</h2>
        <table>
          <thead>
            <tr>
              <th>source</th>
              <th>kind</th>
              <th>placed/desired</th>
              <th>conditions</th>
              <th>lag</th>
              <th>lag, last minutes</th>
              <th>throughput</th>
              <th>throughput, last minutes</th>
            </tr>
          </thead>
          <tbody>
            ${state.sources.map(s => html`<${SourceRow} key=${s.kind + s.name} s=${s} />`)}
          </tbody>
        </table>
      </section>
      <${FlowControl} sources=${state.sources} />
      <${SinkOrigins} sources=${state.sources} />
    </main>
  `
}

render(html`<${App} />`, document.getElementById('app'))
