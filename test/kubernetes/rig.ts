// Shoal in operator mode beside a real API server, as the Kubernetes tests run it: Knative's CRDs and Shoal's RBAC of
// deploy/kubernetes applied, a controller with the controller service account's token (nothing more), a dispatcher,
// and a sink that records what arrives per path (a Service ref `NAME` in namespace `NS` is the path `/NS/NAME`).
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { readFile, readdir, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { connect, createServer as createTcpServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml } from '@kubernetes/client-node'
import type { KubernetesObject } from '@kubernetes/client-node'
import { startControllerProcess } from '../helpers/controllers.ts'
import type { ControllerProcess } from '../helpers/controllers.ts'
import { startDispatcherProcess } from '../helpers/dispatchers.ts'
import type { DispatcherProcess } from '../helpers/dispatchers.ts'
import { uniqueName } from '../helpers/kafka.ts'
import { writeKubeconfig } from '../helpers/kube-apiserver.ts'
import type { ApiServer } from '../helpers/kube-apiserver.ts'

const root = new URL('../../', import.meta.url).pathname

export interface Arrival {
  readonly id: string
  readonly source: string
  readonly data: string
  /** The request's Authorization header, when it had one. */
  readonly authorization?: string
}

export interface OperatorRig {
  readonly sinkUrl: string
  /** What arrived at the sink at `path`, in order. */
  at(path: string): readonly Arrival[]
  readonly controllers: ControllerProcess[]
  readonly dispatchers: DispatcherProcess[]
  /** Starts one more controller of the same installation. */
  addController(): Promise<ControllerProcess>
  /**
   * Cuts every connection the controllers have to the API server (they reach it through a TCP proxy), their watches
   * among them, while the API server stays up; returns how many were cut.
   */
  cutApiConnections(): number
  stop(): Promise<void>
}

/** Every object of a YAML file in the repository, as the client's types hold them (their own field names). */
export async function manifests(path: string): Promise<KubernetesObject[]> {
  return (loadAllYaml(await readFile(join(root, path), 'utf8')) as (KubernetesObject | null)[]).filter(
    (o): o is KubernetesObject => o !== null
  )
}

/**
 * A kubeconfig of the controller service account of deploy/kubernetes/rbac.yaml (a TokenRequest for it), to the API
 * server at `url` (its own by default, or a proxy in front of it).
 */
export async function controllerKubeconfig(api: ApiServer, url = api.url): Promise<string> {
  const admin = new KubeConfig()
  admin.loadFromFile(api.kubeconfig)
  const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: 'shoal',
    name: 'shoal-controller',
    body: { spec: { audiences: [], expirationSeconds: 3600 } }
  })
  const path = join(tmpdir(), `${uniqueName('shoal-controller')}.kubeconfig`)
  await writeKubeconfig(path, { url, caCert: api.caCert }, 'shoal-controller', token.status?.token ?? '')
  return path
}

/**
 * Applies every CRD of deploy/kubernetes/crds and, once their objects are served, the files of deploy/kubernetes named
 * (as the admin).
 */
export async function applyDeploy(api: ApiServer, files: readonly string[]): Promise<void> {
  const admin = new KubeConfig()
  admin.loadFromFile(api.kubeconfig)
  const objects = KubernetesObjectApi.makeApiClient(admin)
  const crds = (await readdir(join(root, 'deploy/kubernetes/crds'))).filter(f => f.endsWith('.yaml'))
  for (const file of crds) {
    for (const object of await manifests(`deploy/kubernetes/crds/${file}`)) await objects.create(object)
  }
  await api.customResourcesServed()
  for (const file of files) {
    for (const object of await manifests(`deploy/kubernetes/${file}`)) await objects.create(object)
  }
}

export async function startOperatorRig(api: ApiServer): Promise<OperatorRig> {
  await applyDeploy(api, ['namespace.yaml', 'rbac.yaml'])
  const proxy = await startTcpProxy(new URL(api.url))
  const kubeconfig = await controllerKubeconfig(api, proxy.url)
  const arrivals = new Map<string, Arrival[]>()
  const sink = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', chunk => chunks.push(chunk as Buffer))
    request.on('end', () => {
      const path = request.url ?? '/'
      const list = arrivals.get(path) ?? []
      list.push({
        id: String(request.headers['ce-id']),
        source: String(request.headers['ce-source']),
        data: Buffer.concat(chunks).toString('utf8'),
        ...(request.headers.authorization === undefined ? {} : { authorization: request.headers.authorization })
      })
      arrivals.set(path, list)
      response.writeHead(202).end()
    })
  })
  sink.listen(0, '127.0.0.1')
  await once(sink, 'listening')
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
  const prefix = uniqueName('k8s-operator')
  const secretKeyFile = join(tmpdir(), `${uniqueName('shoal-secret-key')}.key`)
  await writeFile(secretKeyFile, randomBytes(32).toString('hex'), { mode: 0o600 })
  // Knative's manifests name their sink as a Service ref: here, the sink's path per namespace and name.
  const template = `${sinkUrl}/{namespace}/{name}`
  const flags = [
    '--secret-key-file',
    secretKeyFile,
    '--kubernetes',
    '--kubeconfig',
    kubeconfig,
    '--service-url-template',
    template,
    '--liveness-timeout',
    '3s'
  ]
  const controllers = [await startControllerProcess(prefix, flags)]
  const dispatchers = [
    // The dispatcher opens Shoal's Secrets too: the sinks' OIDC tokens are among them.
    await startDispatcherProcess(
      prefix,
      'dispatcher-0',
      'a',
      'a-0',
      20,
      ['--liveness-timeout', '3s', '--secret-key-file', secretKeyFile],
      {
        env: { SHOAL_SERVICE_URL_TEMPLATE: template }
      }
    )
  ]
  return {
    sinkUrl,
    at: path => arrivals.get(path) ?? [],
    controllers,
    dispatchers,
    cutApiConnections: () => proxy.cut(),
    async addController() {
      const controller = await startControllerProcess(prefix, flags)
      controllers.push(controller)
      return controller
    },
    async stop() {
      // What a failure needs to be understood: the controllers' and dispatchers' logs (warnings and above).
      for (const c of controllers)
        if (c.stderr !== '') console.log(`# controller ${c.url}:\n${c.stderr.slice(-20_000)}`)
      for (const d of dispatchers) if (d.stderr !== '') console.log(`# ${d.id}:\n${d.stderr.slice(-10_000)}`)
      await Promise.all(controllers.map(c => c.stop()))
      await Promise.all(dispatchers.map(d => d.stop()))
      sink.closeAllConnections()
      sink.close()
      proxy.close()
    }
  }
}

/** A TCP proxy to `target` (TLS passes through it untouched) whose connections can all be cut at once. */
async function startTcpProxy(target: URL): Promise<{ url: string; cut(): number; close(): void }> {
  const open = new Set<Socket>()
  const server = createTcpServer(client => {
    const upstream = connect(Number(target.port), target.hostname)
    for (const [from, to] of [
      [client, upstream],
      [upstream, client]
    ] as const) {
      from.pipe(to)
      from.on('error', () => to.destroy())
      from.on('close', () => to.destroy())
    }
    open.add(client)
    client.on('close', () => open.delete(client))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut() {
      const count = open.size
      for (const socket of open) socket.destroy()
      return count
    },
    close() {
      for (const socket of open) socket.destroy()
      server.close()
    }
  }
}
