import type { KafkaNetSpec, SecretValueFromSource } from '../api/index.ts'
import { SaslMechanisms } from '../kafka/index.ts'
import type { KafkaClientSecurity, SaslMechanism } from '../kafka/index.ts'
import type { SecretValues } from './sealed-secret.ts'

/** A source's `spec.net` as client settings, or the first field that cannot be resolved and why. */
export type NetResolution =
  | { readonly kind: 'resolved'; readonly security?: KafkaClientSecurity }
  | { readonly kind: 'unresolved'; readonly field: string; readonly reason: string }

/** The values of Secret `name` in the source's namespace, or undefined when there is no such Secret. */
export type SecretLookup = (name: string) => SecretValues | undefined

/**
 * Resolves Knative's `net` block (`sasl.enable`, `sasl.user|password|type`, `tls.enable`, `tls.caCert|cert|key`,
 * each a `secretKeyRef` into a Secret of the source's own namespace) into client settings. SASL is used only
 * with `sasl.enable: true` and TLS only with `tls.enable: true`, as in Knative; the mechanism defaults to PLAIN.
 * Pure: `lookup` gives the Secrets. Reasons name Secrets and keys, never values.
 */
export function resolveNet(net: KafkaNetSpec | undefined, lookup: SecretLookup): NetResolution {
  if (net === undefined) return { kind: 'resolved' }
  const security: { sasl?: NonNullable<KafkaClientSecurity['sasl']>; tls?: NonNullable<KafkaClientSecurity['tls']> } =
    {}
  if (net.sasl?.enable === true) {
    const user = valueOf(net.sasl.user, 'spec.net.sasl.user', lookup)
    if (user.kind === 'unresolved') return user
    const password = valueOf(net.sasl.password, 'spec.net.sasl.password', lookup)
    if (password.kind === 'unresolved') return password
    const type = valueOf(net.sasl.type, 'spec.net.sasl.type', lookup)
    if (type.kind === 'unresolved') return type
    if (user.value === undefined) return required('spec.net.sasl.user')
    if (password.value === undefined) return required('spec.net.sasl.password')
    const mechanism = (type.value ?? 'PLAIN').trim().toUpperCase()
    if (!(SaslMechanisms as readonly string[]).includes(mechanism)) {
      return {
        kind: 'unresolved',
        field: 'spec.net.sasl.type',
        reason: `the mechanism in the secret is not one of ${SaslMechanisms.join(', ')}`
      }
    }
    security.sasl = { mechanism: mechanism as SaslMechanism, username: user.value, password: password.value }
  }
  if (net.tls?.enable === true) {
    const ca = valueOf(net.tls.caCert, 'spec.net.tls.caCert', lookup)
    if (ca.kind === 'unresolved') return ca
    const cert = valueOf(net.tls.cert, 'spec.net.tls.cert', lookup)
    if (cert.kind === 'unresolved') return cert
    const key = valueOf(net.tls.key, 'spec.net.tls.key', lookup)
    if (key.kind === 'unresolved') return key
    if ((cert.value === undefined) !== (key.value === undefined)) {
      return {
        kind: 'unresolved',
        field: cert.value === undefined ? 'spec.net.tls.cert' : 'spec.net.tls.key',
        reason: 'a client certificate needs both cert and key'
      }
    }
    security.tls = {
      ...(ca.value === undefined ? {} : { ca: ca.value }),
      ...(cert.value === undefined ? {} : { cert: cert.value }),
      ...(key.value === undefined ? {} : { key: key.value })
    }
  }
  return security.sasl === undefined && security.tls === undefined
    ? { kind: 'resolved' }
    : { kind: 'resolved', security }
}

/** The names of the Secrets a `net` block refers to (to re-resolve a source when one of them changes). */
export function secretsReferenced(net: KafkaNetSpec | undefined): string[] {
  const refs = [net?.sasl?.user, net?.sasl?.password, net?.sasl?.type, net?.tls?.caCert, net?.tls?.cert, net?.tls?.key]
  return [...new Set(refs.flatMap(r => (r?.secretKeyRef === undefined ? [] : [r.secretKeyRef.name])))]
}

type Value =
  | { readonly kind: 'value'; readonly value: string | undefined }
  | { readonly kind: 'unresolved'; readonly field: string; readonly reason: string }

function valueOf(source: SecretValueFromSource | undefined, field: string, lookup: SecretLookup): Value {
  const ref = source?.secretKeyRef
  if (ref === undefined) return { kind: 'value', value: undefined }
  const at = `${field}.secretKeyRef`
  const secret = lookup(ref.name)
  if (secret === undefined) {
    return ref.optional === true
      ? { kind: 'value', value: undefined }
      : { kind: 'unresolved', field: at, reason: `secret "${ref.name}" not found in the source's namespace` }
  }
  if (secret.kind === 'failed') {
    return { kind: 'unresolved', field: at, reason: `secret "${ref.name}" cannot be read: ${secret.reason}` }
  }
  const value = secret.values.get(ref.key)
  if (value === undefined) {
    return ref.optional === true
      ? { kind: 'value', value: undefined }
      : { kind: 'unresolved', field: at, reason: `secret "${ref.name}" has no key "${ref.key}"` }
  }
  return { kind: 'value', value: value.toString('utf8') }
}

function required(field: string): NetResolution {
  return { kind: 'unresolved', field, reason: 'required when spec.net.sasl.enable is true' }
}

/** The message of an unresolved `net`: the field, then why. */
export function unresolvedMessage(resolution: Extract<NetResolution, { kind: 'unresolved' }>): string {
  return `${resolution.field}: ${resolution.reason}`
}
