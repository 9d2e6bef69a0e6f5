import packageJson from '../../package.json' with { type: 'json' }
import { apiVersionOf, dispatcherSchema, kinds, schemas, secretSchema } from '../api/index.ts'

/** A small OpenAPI 3 description of the resource API, with the same JSON Schemas the server validates with. */
export function openApiDocument(): unknown {
  const paths: Record<string, unknown> = {}
  const status = { $ref: '#/components/schemas/Status' }
  const errors = {
    '400': { description: 'Bad request', content: { 'application/json': { schema: status } } },
    '404': { description: 'Not found', content: { 'application/json': { schema: status } } },
    '409': { description: 'Conflict', content: { 'application/json': { schema: status } } },
    '413': { description: 'Body too large', content: { 'application/json': { schema: status } } },
    '422': { description: 'Invalid', content: { 'application/json': { schema: status } } }
  }
  for (const k of kinds) {
    const ref = { $ref: `#/components/schemas/${k.kind}` }
    const body = { content: { 'application/json': { schema: ref }, 'application/yaml': { schema: ref } } }
    const ok = { description: k.kind, content: { 'application/json': { schema: ref } } }
    const list = { description: `${k.kind}List`, content: { 'application/json': { schema: { type: 'object' } } } }
    const base = `/apis/${k.group}/${k.version}`
    const ns = { name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }
    const name = { name: 'name', in: 'path', required: true, schema: { type: 'string' } }
    const selector = { name: 'labelSelector', in: 'query', schema: { type: 'string' } }
    if (!k.namespaced) {
      paths[`${base}/${k.plural}`] = {
        get: { summary: `List ${k.plural}`, parameters: [selector], responses: { '200': list } },
        post: { summary: `Create a ${k.kind}`, requestBody: body, responses: { '201': ok, ...errors } }
      }
      paths[`${base}/${k.plural}/{name}`] = {
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
      continue
    }
    paths[`${base}/${k.plural}`] = {
      get: { summary: `List ${k.plural} in every namespace`, parameters: [selector], responses: { '200': list } }
    }
    paths[`${base}/namespaces/{namespace}/${k.plural}`] = {
      get: { summary: `List ${k.plural}`, parameters: [ns, selector], responses: { '200': list } },
      post: { summary: `Create a ${k.kind}`, parameters: [ns], requestBody: body, responses: { '201': ok, ...errors } }
    }
    paths[`${base}/namespaces/{namespace}/${k.plural}/{name}`] = {
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
  return {
    openapi: '3.0.3',
    info: { title: 'Shoal API', version: packageJson.version },
    paths,
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
