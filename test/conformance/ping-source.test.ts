// Knative's PingSource end-to-end assertions (knative/eventing test/rekt/features/pingsource/features.go), against
// one `shoal controller` and one `shoal dispatcher` process, events received by the CloudEvents Python SDK sink (over
// https too, with Python's own TLS).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { http } from '../helpers/http.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { eventually } from '../helpers/wait.ts'
import { certificates, isReady, statusOf, tracingSink } from './helpers.ts'
import type { Arrived, TracingSink } from './helpers.ts'

const PS = '/apis/sources.knative.dev/v1/namespaces/default/pingsources'
const FEATURES = 'eventing test/rekt/features/pingsource/features.go'
const PING = 'dev.knative.sources.ping'

describe('Knative PingSource conformance', () => {
  let controller: ControllerProcess
  let dispatcher: DispatcherProcess
  let sink: TracingSink
  before(async () => {
    const prefix = uniqueName('conf-ping')
    sink = await tracingSink()
    // A Service ref resolves through the template to the Python sink (it ignores the path).
    const template = `${sink.url}{namespace}/{name}`
    controller = await startControllerProcess(prefix, ['--service-url-template', template])
    dispatcher = await startDispatcherProcess(prefix, 'dispatcher-0', 'a', 'a-1', 10, [], {
      env: { SHOAL_SERVICE_URL_TEMPLATE: template }
    })
  })
  after(async () => {
    await controller?.stop()
    await dispatcher?.stop()
    await sink?.stop()
  })

  async function create(label: string, spec: string): Promise<{ name: string; url: string }> {
    const name = uniqueName(label)
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 50)
      .replace(/-+$/, '')
    const created = await http(
      'POST',
      `${controller.url}${PS}`,
      `apiVersion: sources.knative.dev/v1\nkind: PingSource\nmetadata: {name: ${name}}\nspec:\n${spec}`
    )
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const url = `${controller.url}${PS}/${name}`
    await eventually(async () => isReady(await statusOf(url)), 60_000, `PingSource ${name} Ready`)
    return { name, url }
  }
  const from = (name: string) => (e: Arrived) => e['source'] === `/apis/v1/namespaces/default/pingsources/${name}`
  const first = (name: string, timeoutMs = 30_000) =>
    eventually(() => sink.arrived.find(from(name)), timeoutMs, `a ping event from ${name}`)

  it(`SendsEventsWithSinkRef: Must "delivers events" of type ${PING} (${FEATURES})`, async () => {
    const { name } = await create(
      'sink-ref',
      '  schedule: "* * * * * *"\n  sink: {ref: {apiVersion: v1, kind: Service, name: ping-sink}}\n'
    )
    const e = await first(name)
    assert.equal(e['type'], PING)
  })

  it(`SendsEventsWithSinkRef: Must "delivers events" matching HasKnNamespaceHeader (${FEATURES})`, async () => {
    const { name } = await create(
      'kn-namespace',
      '  schedule: "* * * * * *"\n  sink: {ref: {apiVersion: v1, kind: Service, name: ping-sink}}\n'
    )
    const e = await first(name)
    assert.equal(e._headers?.['kn-namespace'], 'default')
  })

  it(`SendsEventsWithSinkURI: Must "delivers events" of type ${PING} (${FEATURES})`, async () => {
    const { name, url } = await create('sink-uri', `  schedule: "* * * * * *"\n  sink: {uri: "${sink.url}"}\n`)
    const e = await first(name)
    assert.equal(e['type'], PING)
    assert.equal((await statusOf(url))['sinkUri'], sink.url)
  })

  it(`SendsEventsWithEventTypes (data part): Must "delivers events" with data "hello, world!" as text/plain (${FEATURES})`, async () => {
    const { name } = await create(
      'data',
      `  schedule: "* * * * * *"\n  contentType: text/plain\n  data: "hello, world!"\n  sink: {uri: "${sink.url}"}\n`
    )
    const e = await first(name)
    assert.equal(e['type'], PING)
    assert.equal(e['datacontenttype'], 'text/plain')
    assert.equal(e._data, 'hello, world!')
  })

  it(`SendsEventsWithCloudEventData: Must "delivers events" with dataBase64 aGVsbG8sIHdvcmxkIQ== decoded (${FEATURES})`, async () => {
    const { name } = await create(
      'data-base64',
      `  schedule: "* * * * * *"\n  contentType: text/plain\n  dataBase64: aGVsbG8sIHdvcmxkIQ==\n  sink: {uri: "${sink.url}"}\n`
    )
    const e = await first(name)
    assert.equal(e['type'], PING)
    assert.equal(e['datacontenttype'], 'text/plain')
    assert.equal(e._data, 'hello, world!')
  })

  it(`SendsEventsWithSecondsInSchedule: Must "delivers events" on "10 0/1 * * * ?" — at second 10 of a minute (${FEATURES})`, async () => {
    const { name } = await create('seconds', `  schedule: "10 0/1 * * * ?"\n  sink: {uri: "${sink.url}"}\n`)
    const e = await first(name, 75_000)
    assert.equal(e['type'], PING)
    // ce-time is the nominal tick: second 10 of some minute.
    assert.equal(new Date(String(e['time'])).getUTCSeconds(), 10)
    assert.equal(new Date(String(e['time'])).getUTCMilliseconds(), 0)
  })

  it(`SendsEventsTLS: Must "delivers events", "Set sinkURI to HTTPS endpoint", "Set sinkCACerts to non empty CA certs" — the Python SDK sink over https, its CA in sink.CACerts (${FEATURES})`, async () => {
    const tls = certificates()
    const secure = await tracingSink([], tls)
    try {
      const ca = tls.ca
        .trim()
        .split('\n')
        .map(l => `      ${l}`)
        .join('\n')
      const { name, url } = await create(
        'tls',
        `  schedule: "* * * * * *"\n  sink:\n    uri: "${secure.url}"\n    CACerts: |\n${ca}\n`
      )
      const e = await eventually(() => secure.arrived.find(from(name)), 30_000, 'a ping event at the https sink')
      assert.equal(e['type'], PING)
      const status = await statusOf(url)
      assert.equal(status['sinkUri'], secure.url)
      assert.match(String(status['sinkUri']), /^https:\/\//)
      assert.ok(String(status['sinkCACerts'] ?? '').includes('BEGIN CERTIFICATE'))
    } finally {
      await secure.stop()
    }
  })
})
