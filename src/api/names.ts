// Name rules: Kubernetes object names, label and annotation keys, Kafka topics, CloudEvents attributes,
// host:port pairs. Each check returns what is wrong, or undefined when the value is fine.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const KAFKA_TOPIC = /^[a-zA-Z0-9._-]+$/
const HOSTNAME = /^[A-Za-z0-9]([-A-Za-z0-9_]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9_]*[A-Za-z0-9])?)*\.?$/
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

/** Kubernetes object names (metadata.name): at most 253 characters of a-z, 0-9, `-`, `.`. */
export function checkDns1123Subdomain(value: string): string | undefined {
  if (value.length > 253) return 'must be at most 253 characters'
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return 'must be a DNS-1123 subdomain: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit'
  }
  return undefined
}

/** Kubernetes namespaces: at most 63 characters of a-z, 0-9, `-`. */
export function checkDns1123Label(value: string): string | undefined {
  if (value.length > 63) return 'must be at most 63 characters'
  if (!DNS1123_LABEL.test(value)) {
    return 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit'
  }
  return undefined
}

/** Service names: a DNS-1035 label (starts with a letter), since they become a host name. */
export function checkDns1035Label(value: string): string | undefined {
  if (value.length > 63) return 'must be at most 63 characters'
  if (!DNS1035_LABEL.test(value)) {
    return 'must be a DNS-1035 label: lowercase letters, digits and "-", starting with a letter and ending with a letter or digit'
  }
  return undefined
}

/** Label and annotation keys: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63 characters. */
export function checkQualifiedName(key: string): string | undefined {
  const slash = key.indexOf('/')
  const prefix = slash === -1 ? undefined : key.slice(0, slash)
  const name = slash === -1 ? key : key.slice(slash + 1)
  if (prefix !== undefined) {
    if (prefix.length === 0) return 'key prefix must not be empty'
    if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) {
      return 'key prefix must be a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")'
    }
  }
  if (name.length === 0) return 'key name must not be empty'
  if (name.length > 63) return 'key name must be at most 63 characters'
  if (!QUALIFIED_NAME_PART.test(name)) {
    return 'key name must consist of letters, digits, "-", "_" or ".", starting and ending with a letter or digit'
  }
  return undefined
}

/** Label values: empty, or at most 63 characters of letters, digits, `-`, `_`, `.`. */
export function checkLabelValue(value: string): string | undefined {
  if (value.length > 63) return 'label value must be at most 63 characters'
  if (value !== '' && !QUALIFIED_NAME_PART.test(value)) {
    return 'label value must be empty or consist of letters, digits, "-", "_" or ".", starting and ending with a letter or digit'
  }
  return undefined
}

/** Kafka topic names: 1–249 characters of a-z, A-Z, 0-9, `.`, `_`, `-`; not `.` or `..`. */
export function checkKafkaTopic(value: string): string | undefined {
  if (value === '' || value === '.' || value === '..') return 'not a valid Kafka topic name'
  if (value.length > 249) return 'Kafka topic names are at most 249 characters'
  if (!KAFKA_TOPIC.test(value)) return 'Kafka topic names consist of letters, digits, ".", "_" and "-" only'
  return undefined
}

/** The context attribute names CloudEvents 1.0 defines; everything else is an extension. */
export const CLOUD_EVENT_CONTEXT_ATTRIBUTES: readonly string[] = Object.freeze([
  'specversion',
  'id',
  'source',
  'type',
  'datacontenttype',
  'dataschema',
  'subject',
  'time'
])

/** Valid CloudEvents attribute names: lowercase ASCII letters and digits. */
export const CLOUD_EVENT_ATTRIBUTE_NAME = /^[a-z0-9]+$/

/** Attributes set by the source itself, which ceOverrides may not replace: the context attributes and the data. */
const reservedCloudEventAttributes: readonly string[] = Object.freeze([...CLOUD_EVENT_CONTEXT_ATTRIBUTES, 'data'])

/** CloudEvents extension attribute names: lowercase a-z and 0-9 (20 characters or fewer is recommended). */
export function checkCloudEventAttributeName(name: string): string | undefined {
  if (!CLOUD_EVENT_ATTRIBUTE_NAME.test(name)) {
    return 'CloudEvents attribute names consist of lowercase letters a-z and digits 0-9 only'
  }
  if (reservedCloudEventAttributes.includes(name)) {
    return `"${name}" is a CloudEvents context attribute the source sets itself; it cannot be overridden`
  }
  return undefined
}

/** A Kafka bootstrap server: `host:port`, host a DNS name, an IPv4 address or a bracketed IPv6 address. */
export function checkHostPort(value: string): string | undefined {
  const expected = 'must be host:port (for example kafka-0.kafka:9092 or [::1]:9092)'
  const colon = value.lastIndexOf(':')
  if (colon <= 0) return expected
  const host = value.slice(0, colon)
  const port = value.slice(colon + 1)
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `${expected}; port must be 1-65535`
  }
  if (host.startsWith('[') && host.endsWith(']')) {
    return isIpv6(host.slice(1, -1)) ? undefined : `${expected}; ${host} is not an IPv6 address`
  }
  if (host.length > 253) return `${expected}; host name too long`
  if (IPV4.test(host) || HOSTNAME.test(host)) return undefined
  return `${expected}; ${JSON.stringify(host)} is not a host name or IP address`
}

function isIpv6(host: string): boolean {
  if (!/^[0-9A-Fa-f:.]+$/.test(host) || !host.includes(':')) return false
  try {
    return new URL(`http://[${host}]/`).hostname !== ''
  } catch {
    return false
  }
}
