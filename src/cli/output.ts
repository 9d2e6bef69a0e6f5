import { stringify } from 'yaml'
import { apiVersionOf } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'
import { isObject } from './resources.ts'
import type { JsonObject } from './resources.ts'

/** `-o json`: kubectl indents by four spaces. */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 4)}\n`
}

export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 })
}

/** Several objects as one document, as kubectl prints them with `-o yaml|json`. */
export function listOf(items: readonly unknown[]): JsonObject {
  return { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items }
}

/** List items may come without apiVersion and kind (Kubernetes omits them); printed objects always carry them. */
export function withTypeMeta(info: KindInfo, object: unknown): unknown {
  if (!isObject(object)) return object
  return { apiVersion: apiVersionOf(info), kind: info.kind, ...object }
}

/** The objects a list response holds. */
export function itemsOf(body: unknown): unknown[] {
  const items = isObject(body) ? body['items'] : undefined
  return Array.isArray(items) ? items : []
}
