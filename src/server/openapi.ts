import packageJson from '../../package.json' with { type: 'json' }
import { apiVersionOf, atVersion, dispatcherSchema, kinds, schemas, secretSchema } from '../api/index.ts'
import type { KindInfo } from '../api/index.ts'

/** A small OpenAPI 3 description of the resource API, with the same JSON Schemas the server validates with. */
export function openApiDocument(): unknown {
  return {
    openapi: '3.0.3',
    info: { title: 'Shoal API', version: packageJson.version },
    paths: Object.fromEntries(
      kinds.flatMap(k => k.versions.flatMap(version => Object.entries(pathsOf(atVersion(k, version)!))))
    ),
    components: {
      schemas: {
        ...Object.fromEntries(
          kinds.map(k => [
            k.kind,
            schemas[k.kind] ??
              (k.kind === 'Dispatcher'
                ? dispatcherSchema
                : k.kind === 'Secret'
                  ? secretSchema
                  : { type: 'object', description: apiVersionOf(k) })
          ])
        ),
        Status: {
          type: 'object',
          properties: {
            kind: { type: 'string' },
            apiVersion: { type: 'string' },
            status: { type: 'string' },
            message: { type: 'string' },
            reason: { type: 'string' },
            code: { type: 'integer' },
            details: { type: 'object' }
          }
        }
      }
    }
  }
}

const status = { $ref: '#/components/schemas/Status' }
const errors = {
  '400': { description: 'Bad request', content: { 'application/json': { schema: status } } },
  '404': { description: 'Not found', content: { 'application/json': { schema: status } } },
  '409': { description: 'Conflict', content: { 'application/json': { schema: status } } },
  '413': { description: 'Body too large', content: { 'application/json': { schema: status } } },
  '422': { description: 'Invalid', content: { 'application/json': { schema: status } } }
}
const ns = { name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }
const name = { name: 'name', in: 'path', required: true, schema: { type: 'string' } }
const selector = { name: 'labelSelector', in: 'query', schema: { type: 'string' } }

/** The paths that serve one kind: cluster-wide ones without a namespace, namespaced ones with and across. */
function pathsOf(k: KindInfo): Record<string, unknown> {
  const ref = { $ref: `#/components/schemas/${k.kind}` }
  const body = { content: { 'application/json': { schema: ref }, 'application/yaml': { schema: ref } } }
  const ok = { description: k.kind, content: { 'application/json': { schema: ref } } }
  const list = { description: `${k.kind}List`, content: { 'application/json': { schema: { type: 'object' } } } }
  const base = `/apis/${k.group}/${k.version}`
  if (!k.namespaced) {
    return {
      [`${base}/${k.plural}`]: {
        get: { summary: `List ${k.plural}`, parameters: [selector], responses: { '200': list } },
        post: { summary: `Create a ${k.kind}`, requestBody: body, responses: { '201': ok, ...errors } }
      },
      [`${base}/${k.plural}/{name}`]: {
        get: { summary: `Read a ${k.kind}`, parameters: [name], responses: { '200': ok, ...errors } },
        put: {
          summary: `Replace a ${k.kind}`,
          parameters: [name],
          requestBody: body,
          responses: { '200': ok, ...errors }
        },
        delete: {
          summary: `Delete a ${k.kind}`,
          parameters: [name],
          responses: { '200': { description: 'Status' }, ...errors }
        }
      }
    }
  }
  return {
    [`${base}/${k.plural}`]: {
      get: { summary: `List ${k.plural} in every namespace`, parameters: [selector], responses: { '200': list } }
    },
    [`${base}/namespaces/{namespace}/${k.plural}`]: {
      get: { summary: `List ${k.plural}`, parameters: [ns, selector], responses: { '200': list } },
      post: { summary: `Create a ${k.kind}`, parameters: [ns], requestBody: body, responses: { '201': ok, ...errors } }
    },
    [`${base}/namespaces/{namespace}/${k.plural}/{name}`]: {
      get: { summary: `Read a ${k.kind}`, parameters: [ns, name], responses: { '200': ok, ...errors } },
      put: {
        summary: `Replace a ${k.kind} (metadata.resourceVersion is a precondition)`,
        parameters: [ns, name],
        requestBody: body,
        responses: { '200': ok, ...errors }
      },
      delete: {
        summary: `Delete a ${k.kind}`,
        parameters: [ns, name, { name: 'resourceVersion', in: 'query', schema: { type: 'string' } }],
        responses: { '200': { description: 'Status' }, ...errors }
      }
    }
  }
}
