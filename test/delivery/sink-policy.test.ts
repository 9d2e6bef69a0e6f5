import assert from 'node:assert/strict'
import type { LookupAddress, lookup } from 'node:dns'
import { after, describe, it } from 'node:test'
import { Deliverer, SinkPolicy, resolveDeliveryPolicy } from '../../src/delivery/index.ts'
import { recordToEvent } from '../../src/kafka-source/index.ts'
import type { CloudEvent, DeliveryTarget } from '../../src/delivery/index.ts'
import { parseDispatcherArgs } from '../../src/dispatcher/index.ts'
import { startSink } from './sink-server.ts'
import type { TestSink } from './sink-server.ts'

const open: { close(): Promise<void> }[] = []
after(async () => {
  await Promise.all(open.map(o => o.close()))
})

/** A DNS that answers from a table, so a name can point anywhere without touching real DNS. */
function fakeLookup(table: Record<string, LookupAddress[]>) {
  return ((hostname: string, _options: unknown, callback: (e: Error | null, a: LookupAddress[]) => void) => {
    const found = table[hostname]
    if (found === undefined) callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), [])
    else callback(null, found)
  }) as unknown as typeof lookup
}

function event(): CloudEvent {
  const result = recordToEvent(
    { topic: 't', partition: 0, offset: 1n, key: null, value: Buffer.from('{}'), headers: [], timestamp: 0n },
    { namespace: 'team-a', name: 'src' },
    {}
  )
  assert.equal(result.kind, 'event')
  return result.kind === 'event' ? result.event : assert.fail()
}

function target(uri: string, deadLetter?: string): DeliveryTarget {
  return {
    sourceKey: 'KafkaSource/team-a/src',
    sink: { uri },
    policy: resolveDeliveryPolicy(
      { retry: 1, backoffDelay: 'PT0.01S' },
      deadLetter === undefined ? undefined : { uri: deadLetter }
    )
  }
}

async function sink(): Promise<TestSink> {
  const s = await startSink(() => ({ status: 200 }))
  open.push(s)
  return s
}

describe('SinkPolicy: addresses and URLs', () => {
  const policy = new SinkPolicy({ ownEndpoints: () => ['http://127.0.0.1:8080', 'https://0.0.0.0:9443'] })

  it('refuses link-local addresses by default, IPv4, IPv6 and IPv4-mapped IPv6', () => {
    assert.match(policy.checkAddress('169.254.169.254', 80) ?? '', /forbidden range 169\.254\.0\.0\/16/)
    assert.match(policy.checkAddress('fe80::1', 80) ?? '', /fe80::\/10/)
    assert.match(policy.checkAddress('::ffff:169.254.169.254', 80) ?? '', /169\.254\.0\.0\/16/)
    assert.equal(policy.checkAddress('10.1.2.3', 80), undefined)
    assert.equal(policy.checkAddress('2001:db8::1', 80), undefined)
  })

  it("refuses Shoal's own endpoints by address and port, and localhost for a loopback or unspecified endpoint", () => {
    assert.match(policy.checkAddress('127.0.0.1', 8080) ?? '', /Shoal's own endpoint/)
    assert.equal(policy.checkAddress('127.0.0.1', 8081), undefined)
    assert.match(
      policy.checkAddress('127.0.0.1', 9443) ?? '',
      /own endpoint/,
      'an endpoint on 0.0.0.0 is every local address'
    )
    assert.match(policy.checkUrl('http://localhost:8080/x') ?? '', /own endpoint/)
    assert.match(policy.checkUrl('https://[fe80::1]/x') ?? '', /fe80/)
    assert.match(policy.checkUrl('http://169.254.169.254/latest/meta-data') ?? '', /169\.254/)
    assert.equal(policy.checkUrl('http://localhost:8081/'), undefined)
    assert.equal(policy.checkUrl('http://sink.team-a.svc.cluster.local/'), undefined)
  })

  it('takes configured ranges instead of the defaults, and names a range that does not parse', () => {
    const custom = new SinkPolicy({ forbiddenCidrs: ['10.0.0.0/8', 'fd00::/8'] })
    assert.match(custom.checkAddress('10.200.0.1', 80) ?? '', /10\.0\.0\.0\/8/)
    assert.equal(custom.checkAddress('169.254.169.254', 80), undefined)
    assert.throws(() => new SinkPolicy({ forbiddenCidrs: ['10.0.0.0/33'] }), /"10\.0\.0\.0\/33" is not a CIDR/)
    assert.throws(() => new SinkPolicy({ forbiddenCidrs: ['metadata'] }), /"metadata" is not a CIDR/)
  })

  it('refuses a name whose DNS answer holds any forbidden address', async () => {
    const withDns = new SinkPolicy({
      lookup: fakeLookup({
        'meta.example': [{ address: '169.254.169.254', family: 4 }],
        'mixed.example': [
          { address: '10.0.0.1', family: 4 },
          { address: 'fe80::2', family: 6 }
        ],
        'fine.example': [{ address: '10.0.0.1', family: 4 }]
      })
    })
    const resolve = (name: string) =>
      new Promise<unknown>(resolve =>
        withDns.lookupFor(80)(name, { all: true }, (error, addresses) => resolve(error ?? addresses))
      )
    assert.match(String(await resolve('meta.example')), /meta\.example refused: 169\.254\.169\.254/)
    assert.match(String(await resolve('mixed.example')), /fe80::2 is in the forbidden range/)
    assert.deepEqual(await resolve('fine.example'), [{ address: '10.0.0.1', family: 4 }])
  })
})

describe('Deliverer with a sink policy: refused when connecting', () => {
  it('never connects to a sink at a forbidden IP literal; the event goes to the dead letter sink', async () => {
    const forbidden = await sink()
    const deadLetter = await sink()
    const policy = new SinkPolicy({ forbiddenCidrs: ['127.0.0.2/32'] })
    const d = new Deliverer({ sinkPolicy: policy })
    open.push(d)
    const url = forbidden.url.replace('127.0.0.1', '127.0.0.2')
    const outcome = await d.deliver(event(), target(url, deadLetter.url))
    assert.equal(outcome.kind, 'dead-lettered')
    assert.equal(forbidden.received.length, 0)
    assert.equal(deadLetter.received.length, 1)
    const errorData = Buffer.from(String(deadLetter.received[0]?.headers['ce-knativeerrordata']), 'base64')
    assert.match(errorData.toString(), /SHOAL_SINK_REFUSED .*127\.0\.0\.2 is in the forbidden range 127\.0\.0\.2\/32/)
  })

  it('refuses a host name after DNS resolution (localhost → loopback), and delivers to an allowed one', async () => {
    const s = await sink()
    const port = new URL(s.url).port
    const refusing = new Deliverer({ sinkPolicy: new SinkPolicy({ forbiddenCidrs: ['127.0.0.0/8', '::1/128'] }) })
    open.push(refusing)
    const outcome = await refusing.deliver(event(), target(`http://localhost:${port}/`))
    assert.equal(outcome.kind, 'dropped')
    assert.equal(s.received.length, 0)
    const allowing = new Deliverer({ sinkPolicy: new SinkPolicy() })
    open.push(allowing)
    const delivered = await allowing.deliver(event(), target(`http://localhost:${port}/`))
    assert.equal(delivered.kind, 'delivered')
    assert.equal(s.received.length, 1)
  })
})

describe('shoal dispatcher --forbidden-sink-cidrs', () => {
  const required = [
    '--kafka',
    '127.0.0.1:9092',
    '--id',
    'dispatcher-0',
    '--zone',
    'a',
    '--node',
    'n',
    '--capacity',
    '1'
  ]

  it('takes default (link-local), none, or a list, and names a range that does not parse', () => {
    const parse = (value: string) => parseDispatcherArgs([...required, '--forbidden-sink-cidrs', value], {})
    const given = parse('default,10.0.0.0/8')
    assert.deepEqual(given !== 'help' && given.forbiddenSinkCidrs, ['169.254.0.0/16', 'fe80::/10', '10.0.0.0/8'])
    const none = parse('none')
    assert.deepEqual(none !== 'help' && none.forbiddenSinkCidrs, [])
    const absent = parseDispatcherArgs(required, {})
    assert.equal(absent !== 'help' && absent.forbiddenSinkCidrs, undefined, 'no flag: no sink policy')
    assert.throws(() => parse('10.0.0.0/40'), /--forbidden-sink-cidrs: "10\.0\.0\.0\/40" is not a CIDR/)
  })
})
