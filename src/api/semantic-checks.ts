// Checks a JSON Schema cannot express well. They run on the same input as the schema and report in the
// same list; each looks only at values of the right type (the schema reports the wrong ones).

import { batchAnnotationErrors } from './batch-annotations.ts'
import { tryParseIsoDuration } from './duration.ts'
import { parseFlowControl } from './flow-annotations.ts'
import { OIDC_ANNOTATION, parseOidcAnnotation } from './oidc-annotation.ts'
import type { PathSegment } from './field-path.ts'
import {
  checkCloudEventAttributeName,
  checkDns1035Label,
  checkDns1123Label,
  checkDns1123Subdomain,
  checkHostPort,
  checkKafkaTopic,
  checkLabelValue,
  checkQualifiedName
} from './names.ts'
import { checkSchedule, checkTimezone } from './schedule.ts'

export interface PathError {
  readonly path: readonly PathSegment[]
  readonly message: string
}

type Report = (path: readonly PathSegment[], message: string) => void
type Json = Record<string, unknown>

/** The apiVersions under which a `kind: Service` ref is understood. */
export const serviceApiVersions: readonly string[] = Object.freeze(['v1', 'serving.knative.dev/v1'])

const ANNOTATIONS_MAX_BYTES = 256 * 1024
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;\s*[^\s;=]+=[^;]*)*$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----\s*[A-Za-z0-9+/=\s]+?\s*-----END CERTIFICATE-----/g
const PRINTABLE_NO_SPACE = /^[\x21-\x7e]+$/

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** Semantic errors of a KafkaSource or PingSource whose apiVersion and kind are already known. */
export function semanticErrors(kind: 'KafkaSource' | 'PingSource', input: Json): PathError[] {
  const errors: PathError[] = []
  const report: Report = (path, message) => errors.push({ path, message })
  checkMetadata(input['metadata'], report)
  const metadata = input['metadata']
  if (kind === 'KafkaSource' && isRecord(metadata) && isRecord(metadata['annotations'])) {
    for (const [name, message] of batchAnnotationErrors(metadata['annotations'])) {
      report(['metadata', 'annotations', name], message)
    }
  }
  if (kind === 'KafkaSource') checkFlowAnnotations(input['metadata'], report)
  if (isRecord(metadata) && isRecord(metadata['annotations'])) {
    const oidc = parseOidcAnnotation(metadata['annotations'])
    if (oidc.kind === 'invalid') report(['metadata', 'annotations', OIDC_ANNOTATION], oidc.message)
  }
  const spec = input['spec']
  if (isRecord(spec)) {
    if (kind === 'KafkaSource') checkKafkaSpec(spec, report)
    else checkPingSpec(spec, report)
    checkCeOverrides(spec['ceOverrides'], ['spec', 'ceOverrides'], report)
    if (spec['sink'] !== undefined) checkDestination(spec['sink'], ['spec', 'sink'], report)
  }
  return errors
}

function checkMetadata(metadata: unknown, report: Report): void {
  if (!isRecord(metadata)) return
  const name = str(metadata['name'])
  if (name !== undefined && name !== '') reportIf(report, ['metadata', 'name'], checkDns1123Subdomain(name))
  const namespace = str(metadata['namespace'])
  if (namespace !== undefined && namespace !== '') {
    reportIf(report, ['metadata', 'namespace'], checkDns1123Label(namespace))
  }
  const labels = metadata['labels']
  if (isRecord(labels)) {
    for (const [key, value] of Object.entries(labels)) {
      const path = ['metadata', 'labels', key]
      reportIf(
        report,
        path,
        checkQualifiedName(key) ?? (typeof value === 'string' ? checkLabelValue(value) : undefined)
      )
    }
  }
  const annotations = metadata['annotations']
  if (isRecord(annotations)) {
    let bytes = 0
    for (const [key, value] of Object.entries(annotations)) {
      reportIf(report, ['metadata', 'annotations', key], checkQualifiedName(key))
      bytes += Buffer.byteLength(key) + (typeof value === 'string' ? Buffer.byteLength(value) : 0)
    }
    if (bytes > ANNOTATIONS_MAX_BYTES) {
      report(['metadata', 'annotations'], `must be at most 256 KiB in all (keys and values); got ${bytes} bytes`)
    }
  }
}

// The flow control annotations are Shoal's own; only a KafkaSource's deliveries read them.
function checkFlowAnnotations(metadata: unknown, report: Report): void {
  if (!isRecord(metadata) || !isRecord(metadata['annotations'])) return
  const flow = parseFlowControl(metadata['annotations'])
  if (flow.kind !== 'invalid') return
  for (const error of flow.errors) report(['metadata', 'annotations', error.annotation], error.message)
}

function checkKafkaSpec(spec: Json, report: Report): void {
  const servers = spec['bootstrapServers']
  if (Array.isArray(servers)) {
    servers.forEach((server, i) => {
      if (typeof server !== 'string' || server === '') return
      const problems = server.split(',').map(s => (s.trim() === '' ? 'empty entry in list' : checkHostPort(s.trim())))
      reportIf(
        report,
        ['spec', 'bootstrapServers', i],
        problems.find(p => p !== undefined)
      )
    })
  }
  const topics = spec['topics']
  if (Array.isArray(topics)) {
    const seen = new Map<string, number>()
    topics.forEach((topic, i) => {
      if (typeof topic !== 'string' || topic === '') return
      const first = seen.get(topic)
      if (first !== undefined) report(['spec', 'topics', i], `duplicate of spec.topics[${first}]`)
      else seen.set(topic, i)
      reportIf(report, ['spec', 'topics', i], checkKafkaTopic(topic))
    })
  }
  const group = str(spec['consumerGroup'])
  if (group !== undefined && group !== '' && !PRINTABLE_NO_SPACE.test(group)) {
    report(['spec', 'consumerGroup'], 'must consist of printable ASCII characters without spaces')
  }
  const net = spec['net']
  if (isRecord(net)) {
    const sasl = net['sasl']
    if (isRecord(sasl) && sasl['enable'] === true) {
      for (const field of ['user', 'password']) {
        if (!hasSecretRef(sasl[field])) {
          report(['spec', 'net', 'sasl', field], 'required (a secretKeyRef) when spec.net.sasl.enable is true')
        }
      }
    }
    const tls = net['tls']
    if (isRecord(tls) && hasSecretRef(tls['cert']) !== hasSecretRef(tls['key'])) {
      const missing = hasSecretRef(tls['cert']) ? 'key' : 'cert'
      report(['spec', 'net', 'tls', missing], 'cert and key go together: a client certificate needs its key')
    }
  }
  const delivery = spec['delivery']
  if (isRecord(delivery)) checkDelivery(delivery, report)
}

function hasSecretRef(value: unknown): boolean {
  return isRecord(value) && isRecord(value['secretKeyRef'])
}

function checkDelivery(delivery: Json, report: Report): void {
  for (const field of ['backoffDelay', 'timeout', 'retryAfterMax']) {
    const value = str(delivery[field])
    if (value === undefined || value === '') continue
    const ms = tryParseIsoDuration(value)
    const path = ['spec', 'delivery', field]
    if (ms === undefined) report(path, 'not an ISO-8601 duration (for example PT0.5S, PT10S, PT1M, P1D)')
    else if (field === 'timeout' && ms === 0) report(path, 'must be greater than zero')
  }
  const deadLetterSink = delivery['deadLetterSink']
  if (deadLetterSink !== undefined) checkDestination(deadLetterSink, ['spec', 'delivery', 'deadLetterSink'], report)
}

function checkPingSpec(spec: Json, report: Report): void {
  const timezone = str(spec['timezone'])
  const timezoneProblem = timezone === undefined || timezone === '' ? undefined : checkTimezone(timezone)
  reportIf(report, ['spec', 'timezone'], timezoneProblem)
  const schedule = str(spec['schedule'])
  if (schedule !== undefined && schedule !== '') {
    const zone = timezone === undefined || timezone === '' || timezoneProblem !== undefined ? undefined : timezone
    reportIf(report, ['spec', 'schedule'], checkSchedule(schedule, zone))
  }
  const contentType = str(spec['contentType'])
  if (contentType !== undefined && contentType !== '' && !MEDIA_TYPE.test(contentType)) {
    report(['spec', 'contentType'], 'not a media type (for example application/json or text/plain; charset=utf-8)')
  }
  const isJson = contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType)
  const data = str(spec['data'])
  const dataBase64 = str(spec['dataBase64'])
  if (data !== undefined && dataBase64 !== undefined) {
    report(['spec', 'data'], 'spec.data and spec.dataBase64 are mutually exclusive; set one')
    report(['spec', 'dataBase64'], 'spec.data and spec.dataBase64 are mutually exclusive; set one')
    return
  }
  if (data !== undefined && isJson && !isJsonText(data)) {
    report(['spec', 'data'], 'not valid JSON, but spec.contentType is application/json')
  }
  if (dataBase64 !== undefined) {
    const compact = dataBase64.replace(/[\r\n]/g, '')
    if (!BASE64.test(compact)) {
      report(['spec', 'dataBase64'], 'not valid base64 (standard alphabet, with padding)')
    } else if (isJson && !isJsonText(Buffer.from(compact, 'base64').toString('utf8'))) {
      report(['spec', 'dataBase64'], 'does not decode to valid JSON, but spec.contentType is application/json')
    }
  }
}

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

function checkCeOverrides(overrides: unknown, path: readonly PathSegment[], report: Report): void {
  if (!isRecord(overrides)) return
  const extensions = overrides['extensions']
  if (!isRecord(extensions)) return
  for (const name of Object.keys(extensions)) {
    reportIf(report, [...path, 'extensions', name], checkCloudEventAttributeName(name))
  }
}

/** Knative's rules for a duckv1.Destination, restricted to the refs Shoal resolves. */
function checkDestination(dest: unknown, path: readonly PathSegment[], report: Report): void {
  if (!isRecord(dest)) return
  const ref = dest['ref']
  const uri = str(dest['uri'])
  if (ref === undefined && dest['uri'] === undefined) {
    report(path, 'one of ref or uri is required')
  }
  if (isRecord(ref)) checkReference(ref, [...path, 'ref'], report)
  if (uri !== undefined && uri !== '') {
    if (ref !== undefined) {
      if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri) || uri.startsWith('//')) {
        report(
          [...path, 'uri'],
          'must be a relative path when ref is set (it is resolved against the ref); drop ref to use an absolute URI'
        )
      } else if (!URL.canParse(uri, 'http://example.invalid/')) {
        report([...path, 'uri'], 'not a valid relative URI')
      }
    } else {
      const problem = checkAbsoluteHttpUrl(uri)
      reportIf(report, [...path, 'uri'], problem)
    }
  }
  const caCerts = str(dest['CACerts'])
  if (caCerts !== undefined && caCerts !== '' && !isPem(caCerts)) {
    report(
      [...path, 'CACerts'],
      'must be PEM: one or more -----BEGIN CERTIFICATE----- … -----END CERTIFICATE----- blocks'
    )
  }
}

function checkReference(ref: Json, path: readonly PathSegment[], report: Report): void {
  const kind = str(ref['kind'])
  const apiVersion = str(ref['apiVersion'])
  if (kind !== undefined && kind !== 'Service') {
    report(
      [...path, 'kind'],
      `${JSON.stringify(kind)} is not supported: Shoal resolves only kind Service (apiVersion v1 or serving.knative.dev/v1); give any other sink as an absolute uri`
    )
  } else if (kind !== undefined && apiVersion !== undefined && !serviceApiVersions.includes(apiVersion)) {
    report([...path, 'apiVersion'], 'a Service ref must have apiVersion v1 or serving.knative.dev/v1')
  }
  const name = str(ref['name'])
  if (name !== undefined && name !== '') reportIf(report, [...path, 'name'], checkDns1035Label(name))
  const namespace = str(ref['namespace'])
  if (namespace !== undefined && namespace !== '')
    reportIf(report, [...path, 'namespace'], checkDns1123Label(namespace))
}

/** What is wrong with `uri` as an absolute http(s) URL, or undefined. */
export function checkAbsoluteHttpUrl(uri: string): string | undefined {
  if (!URL.canParse(uri)) {
    return 'must be an absolute http or https URL (a relative URI needs a ref to resolve against)'
  }
  const url = new URL(uri)
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `scheme ${url.protocol} is not supported; use http or https`
  if (url.hostname === '') return 'must have a host'
  return undefined
}

function isPem(text: string): boolean {
  const blocks = text.match(PEM_BLOCK)
  return blocks !== null && text.replace(PEM_BLOCK, '').trim() === ''
}

function reportIf(report: Report, path: readonly PathSegment[], problem: string | undefined): void {
  if (problem !== undefined) report(path, problem)
}
